package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// BenchmarkTaskOverHTTP is one TextAgent task through the gateway (POST
// /api/agents/TextAgent/tasks, waiting for the result); BenchmarkTaskDirect
// is the same task sent the same way without HTTP (a subscription on its
// result subject, then the client package's Dispatch). Their ratio is the
// gateway's overhead on a task.
func BenchmarkTaskOverHTTP(b *testing.B) {
	m := newTestMesh(b)
	const body = `{"inputs":{"text":{"data_type":"TEXT","value":"bench"}},"params":{"op":"upper"}}`
	hc := &http.Client{}
	for b.Loop() {
		resp, err := hc.Post(m.http.URL+"/api/agents/TextAgent/tasks", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

func BenchmarkTaskDirect(b *testing.B) {
	m := newTestMesh(b)
	c := m.gw.def
	task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("bench", "bench")},
		Params: map[string]any{"op": "upper"}, TimeoutMS: 30000}
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		meta := client.DispatchMeta{TaskID: uuid.NewString()}
		meta.ReplyTo = c.names.Result("TextAgent", meta.TaskID)
		sub, err := c.nc.SubscribeSync(meta.ReplyTo)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.disp.Dispatch(ctx, "TextAgent", task, meta); err != nil {
			b.Fatal(err)
		}
		if res, err := awaitResult(ctx, sub); err != nil || !res.Success {
			b.Fatalf("%v %+v", err, res)
		}
		_ = sub.Unsubscribe()
		cancel()
	}
}

// BenchmarkAgentsList is GET /api/agents with four live agents (registry
// view, backlog of each consumer, recent results).
func BenchmarkAgentsList(b *testing.B) {
	m := newTestMesh(b)
	hc := &http.Client{}
	for b.Loop() {
		resp, err := hc.Get(m.http.URL + "/api/agents")
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}
