package orchestrator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/schemas"
)

// BenchmarkPipelineOverhead measures per-step orchestration on a 100-step
// chain and on a 10-wide, 100-deep pipeline of no-op agents, side by side
// with the same sequence written directly against nats.go (publish the task,
// consume its result, update KV) through the same agent runtime. Compare
// the ns/step metrics of the mesh and raw sub-benchmarks.
func BenchmarkPipelineOverhead(b *testing.B) {
	m := newMesh(b)
	m.agent(b, schemas.AgentContract{Name: "Noop", Capability: schemas.CapTransformation, Description: "does nothing"},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return ok("Noop", "", nil), nil
		}, 16)
	m.orchestrator(b, []string{"Noop"}, orchestrator.WithStateOptions(orchestrator.WithMaxStateBytes(900<<10)))
	js := m.srv.JetStream(b)
	names := m.srv.Names()

	shapes := []struct {
		name         string
		width, depth int
	}{{"chain100", 1, 100}, {"wide10x100", 10, 100}}
	for _, sh := range shapes {
		steps := sh.width * sh.depth
		b.Run(sh.name+"/mesh", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				p := orchestrator.NewPipeline("bench")
				for d := range sh.depth {
					for w := range sh.width {
						p.Step(fmt.Sprintf("s%d-%d", d, w), "Noop")
						if d > 0 {
							p.After(fmt.Sprintf("s%d-%d", d-1, w))
						}
					}
				}
				id := fmt.Sprintf("bench-%s-%d-%d", sh.name, i, time.Now().UnixNano())
				events := subscribeEvents(b, m, id) // wait on the run's end event, not by polling KV
				m.submit(b, p.MustBuild(), id)
				for ev := range events {
					if ev.Type == bus.TypePipelineCompleted {
						var re orchestrator.RunEvent
						if err := ev.DataAs(&re); err != nil || re.Status != orchestrator.RunCompleted {
							b.Fatalf("run %s: %+v %v", id, re, err)
						}
						break
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*steps), "ns/step")
		})
		b.Run(sh.name+"/raw", func(b *testing.B) {
			ctx := context.Background()
			prefix := fmt.Sprintf("raw%s", sh.name)
			// Results come back outside mesh.result.orchestrator.>, so the
			// orchestrator replica running alongside does no work for them.
			replyTo := names.Result(prefix)
			cons, err := js.CreateOrUpdateConsumer(ctx, names.ResultsStream(), jetstream.ConsumerConfig{
				Durable: prefix, FilterSubject: replyTo + ".>", AckPolicy: jetstream.AckExplicitPolicy,
			})
			if err != nil {
				b.Fatal(err)
			}
			it, err := cons.Messages()
			if err != nil {
				b.Fatal(err)
			}
			defer it.Stop()
			subject, _ := names.Task("Noop")
			for i := 0; b.Loop(); i++ {
				key := fmt.Sprintf("%s-%d-%d", prefix, i, time.Now().UnixNano())
				rev, err := m.res.Runs.Create(ctx, key, []byte(`{"step":0}`))
				if err != nil {
					b.Fatal(err)
				}
				for d := range sh.depth {
					for w := range sh.width {
						ev, _ := bus.NewEvent(bus.TypeTaskRequested, "raw", schemas.TaskRequest{TimeoutMS: 60000})
						ev.ID = fmt.Sprintf("%s-%d-%d", key, d, w)
						ev.SetExt(bus.ExtReplyTo, replyTo+"."+key)
						ev.SetExt(bus.ExtDeadline, time.Now().Add(time.Minute).UTC().Format(time.RFC3339))
						msg, _ := bus.Encode(subject, ev)
						msg.Header.Set(jetstream.MsgIDHeader, ev.ID)
						if _, err := js.PublishMsg(ctx, msg); err != nil {
							b.Fatal(err)
						}
					}
					for range sh.width {
						msg, err := it.Next()
						if err != nil {
							b.Fatal(err)
						}
						if rev, err = m.res.Runs.Update(ctx, key, []byte(fmt.Sprintf(`{"step":%d}`, d)), rev); err != nil {
							b.Fatal(err)
						}
						_ = msg.Ack()
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*steps), "ns/step")
		})
	}
}
