package agents_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

func noop(name string) agents.Agent {
	return agents.Func(schemas.AgentContract{Name: name, Capability: schemas.CapEvaluation, Description: "does nothing"},
		func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.AgentResult{Success: true}, nil
		})
}

// BenchmarkTaskRoundTrip measures one no-op task dispatched through
// MESH_TASKS and its result received, side by side with a raw core NATS
// request-reply on the same server, and the task throughput of one and two
// instances. The p50s are reported as p50-ns; the ratio is reported by the
// agentmesh sub-benchmark against the raw baseline of the same run.
func BenchmarkTaskRoundTrip(b *testing.B) {
	m := newMesh(b)
	var rawP50 float64

	b.Run("raw-request-reply", func(b *testing.B) {
		sub, err := m.srv.Conn(b).Subscribe("bench.echo", func(msg *nats.Msg) { _ = msg.Respond(msg.Data) })
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Unsubscribe()
		nc := m.nc
		durs := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for b.Loop() {
			start := time.Now()
			if _, err := nc.Request("bench.echo", []byte(`{}`), 5*time.Second); err != nil {
				b.Fatal(err)
			}
			durs = append(durs, time.Since(start))
		}
		rawP50 = p50(durs)
		b.ReportMetric(rawP50, "p50-ns")
	})

	b.Run("agentmesh", func(b *testing.B) {
		m.serve(b, noop("Noop"))
		subj, _ := m.n.Task("Noop")
		durs := make([]time.Duration, 0, b.N)
		ctx := context.Background()
		b.ResetTimer()
		for b.Loop() {
			start := time.Now()
			ev, _ := bus.NewEvent(bus.TypeTaskRequested, "/bench", []byte(`{}`))
			ev.DataContentType = bus.ContentTypeJSON
			sub, err := m.nc.SubscribeSync(m.n.Result(ev.ID))
			if err != nil {
				b.Fatal(err)
			}
			msg, _ := bus.Encode(subj, ev)
			if _, err := m.js.PublishMsg(ctx, msg); err != nil {
				b.Fatal(err)
			}
			if _, err := sub.NextMsg(10 * time.Second); err != nil {
				b.Fatal(err)
			}
			_ = sub.Unsubscribe()
			durs = append(durs, time.Since(start))
		}
		p := p50(durs)
		b.ReportMetric(p, "p50-ns")
		if rawP50 > 0 {
			b.ReportMetric(p/rawP50, "x-raw-p50")
		}
	})

	for _, instances := range []int{1, 2} {
		b.Run(fmt.Sprintf("throughput-%d-instances", instances), func(b *testing.B) {
			name := fmt.Sprintf("Noop%d", instances)
			for range instances {
				m.serve(b, noop(name), agents.WithConcurrency(8))
			}
			subj, _ := m.n.Task(name)
			results := make(chan struct{}, 1024)
			sub, err := m.nc.Subscribe("mesh.result.>", func(*nats.Msg) { results <- struct{}{} })
			if err != nil {
				b.Fatal(err)
			}
			defer sub.Unsubscribe()
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			n := b.N
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n {
					<-results
				}
			}()
			for range n {
				ev, _ := bus.NewEvent(bus.TypeTaskRequested, "/bench", []byte(`{}`))
				msg, _ := bus.Encode(subj, ev)
				if _, err := m.js.PublishMsgAsync(msg); err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "tasks/s")
		})
	}
}

func p50(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2])
}
