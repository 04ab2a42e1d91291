package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
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

// BenchmarkSSEDelta measures how long a piece of a model's text takes from
// its publish on mesh.delta.<conversation> to a reader of the
// conversation's event stream (GET /api/conversations/{id}/events over
// HTTP), one piece at a time; p50 and p90 are reported.
func BenchmarkSSEDelta(b *testing.B) {
	m := newTestMesh(b)
	const conv = "c-bench"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", m.http.URL+"/api/conversations/"+conv+"/events?from=now", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	nc := m.srv.Conn(b)
	subject := m.srv.Names().Deltas(conv)
	var durs []time.Duration
	seq := 0
	for b.Loop() {
		seq++
		data, _ := json.Marshal(schemas.ChatDelta{ConversationID: conv, Turn: 1, Step: 1, Seq: seq, Text: "piece"})
		start := time.Now()
		if err := nc.Publish(subject, data); err != nil {
			b.Fatal(err)
		}
		want := fmt.Sprintf(`"seq":%d,`, seq)
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "data: ") && strings.Contains(lines.Text(), want) {
				break
			}
		}
		durs = append(durs, time.Since(start))
	}
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(durs[len(durs)*9/10].Microseconds()), "p90-µs")
}
