package chat_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// BenchmarkChatFirstDelta measures how long the model's first piece of
// text takes from the model server to a client following the turn
// (client.Turn with WithDeltas): from the scripted server receiving the
// request, just before it writes the first piece, to the client's
// callback. One chat turn per iteration, one model call each; p50 and p90
// are reported as ms-p50 and ms-p90.
func BenchmarkChatFirstDelta(b *testing.B) {
	m := meshtest.New(b)
	srv := llmtest.New(b)
	srv.Handle(func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "Hello there.", Chunks: []string{"Hello", " there."}}
	})
	chatReplica(b, m, nil, nil, chat.WithLLM(newLLM(b, srv)))
	js := m.Srv.JetStream(b)
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		var first time.Time
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, _, err := client.Turn(ctx, js, m.Srv.Names(), fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i), "hi", "bench", nil, nil,
			client.WithDeltas(func(schemas.ChatDelta) {
				if first.IsZero() {
					first = time.Now()
				}
			}))
		cancel()
		if err != nil || resp.State != schemas.ChatCompleted || first.IsZero() {
			b.Fatalf("turn %d: %+v, %v (first delta at %v)", i, resp, err, first)
		}
		reqs := srv.Requests()
		lat = append(lat, first.Sub(reqs[len(reqs)-1].At))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "ms-p90")
}
