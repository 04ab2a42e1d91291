package orchestrator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// BenchmarkPipelineOverhead measures per-step orchestration on a 100-step
// chain and on a 10-wide, 100-deep pipeline of no-op agents, and on a
// 100-step chain of agents with an output to route, side by side with the
// same sequence written directly against nats.go (publish the task,
// consume its result, update KV) through the same agent runtime.
//
// Each iteration runs the pipeline once through the mesh and once raw,
// alternating which goes first, so both sides see the same machine: the
// metrics are mesh-ns/step, raw-ns/step and their ratio, mesh/raw, and the
// process's CPU time per step on each side.
func BenchmarkPipelineOverhead(b *testing.B) {
	m := meshtest.New(b)
	m.Agent(b, schemas.AgentContract{Name: "Noop", Capability: schemas.CapTransformation, Description: "does nothing"},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return fixture.OK("Noop", "", nil), nil
		}, 16)
	// Emit is Noop with an output, which the orchestrator routes into the
	// run's state: every real agent has outputs.
	m.Agent(b, schemas.AgentContract{Name: "Emit", Capability: schemas.CapTransformation, Description: "returns a word",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return fixture.OK("Emit", "", map[string]schemas.TypedValue{"text": {DataType: schemas.TypeText, Value: []byte(`"word"`)}}), nil
		}, 16)
	m.Orchestrator(b, []string{"Noop", "Emit"}, orchestrator.WithStateOptions(state.WithMaxStateBytes(900<<10)))

	shapes := []struct {
		name         string
		agent        string
		width, depth int
	}{{"chain100", "Noop", 1, 100}, {"wide10x100", "Noop", 10, 100}, {"chain100-outputs", "Emit", 1, 100}}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			raw := newRawPipeline(b, m, sh.name, sh.agent, sh.width, sh.depth)
			var meshT, rawT, meshCPU, rawCPU time.Duration
			mesh := func(id string) {
				c := cpuTime()
				meshT += runMeshPipeline(b, m, id, sh.agent, sh.width, sh.depth)
				meshCPU += cpuTime() - c
			}
			baseline := func(id string) {
				c := cpuTime()
				rawT += raw.run(b, id)
				rawCPU += cpuTime() - c
			}
			for i := 0; b.Loop(); i++ {
				id := fmt.Sprintf("bench-%s-%d-%d", sh.name, i, time.Now().UnixNano())
				if i%2 == 0 {
					mesh(id)
					baseline(id)
				} else {
					baseline(id)
					mesh(id)
				}
			}
			steps := float64(b.N * sh.width * sh.depth)
			b.ReportMetric(float64(meshT.Nanoseconds())/steps, "mesh-ns/step")
			b.ReportMetric(float64(rawT.Nanoseconds())/steps, "raw-ns/step")
			b.ReportMetric(float64(meshT)/float64(rawT), "mesh/raw")
			// CPU of the whole process (server, agent, orchestrator and
			// client all run in it) per step.
			b.ReportMetric(float64(meshCPU.Nanoseconds())/steps, "mesh-cpu-ns/step")
			b.ReportMetric(float64(rawCPU.Nanoseconds())/steps, "raw-cpu-ns/step")
		})
	}
}

// runMeshPipeline submits a width x depth pipeline of Noop steps and
// returns how long it took to complete, waiting on the run's end event
// (not by polling KV; the other events are skipped by their type header,
// undecoded).
func runMeshPipeline(b *testing.B, m *meshtest.Mesh, id, agent string, width, depth int) time.Duration {
	p := client.NewPipeline("bench")
	for d := range depth {
		for w := range width {
			p.Step(fmt.Sprintf("s%d-%d", d, w), agent)
			if d > 0 {
				p.After(fmt.Sprintf("s%d-%d", d-1, w))
			}
		}
	}
	spec := p.MustBuild()
	ended := make(chan *nats.Msg, 1)
	sub, err := m.NC.Subscribe(m.Srv.Names().EventsOf(id), func(msg *nats.Msg) {
		if msg.Header.Get("ce-type") == bus.TypePipelineCompleted {
			ended <- msg
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := m.NC.Flush(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	m.Submit(b, spec, id)
	select {
	case msg := <-ended:
		took := time.Since(start)
		var re schemas.RunEvent
		ev, err := bus.Decode(msg)
		if err == nil {
			err = ev.DataAs(&re)
		}
		if err != nil || re.Status != schemas.RunCompleted {
			b.Fatalf("run %s: %+v %v", id, re, err)
		}
		return took
	case <-time.After(time.Minute):
		b.Fatalf("run %s did not end within a minute", id)
		return 0
	}
}

// rawPipeline is the baseline: the same waves of tasks published to the
// same agent, each result consumed from MESH_RESULTS and counted in a KV
// update, written directly against nats.go.
type rawPipeline struct {
	m            *meshtest.Mesh
	js           jetstream.JetStream
	it           jetstream.MessagesContext
	subject      string
	replyTo      string
	width, depth int
}

func newRawPipeline(b *testing.B, m *meshtest.Mesh, name, agent string, width, depth int) *rawPipeline {
	names := m.Srv.Names()
	js := m.Srv.JetStream(b)
	prefix := "raw" + name
	// Results come back outside mesh.result.*.orchestrator.>, so the
	// orchestrator replica running alongside does no work for them.
	replyTo := names.Result(agent, prefix)
	cons, err := js.CreateOrUpdateConsumer(context.Background(), names.ResultsStream(), jetstream.ConsumerConfig{
		Durable: prefix, FilterSubject: replyTo + ".>", AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(it.Stop)
	subject, _ := names.Task(agent)
	return &rawPipeline{m: m, js: js, it: it, subject: subject, replyTo: replyTo, width: width, depth: depth}
}

func (r *rawPipeline) run(b *testing.B, id string) time.Duration {
	ctx := context.Background()
	key := "raw-" + id
	start := time.Now()
	rev, err := r.m.Res.Runs.Create(ctx, key, []byte(`{"step":0}`))
	if err != nil {
		b.Fatal(err)
	}
	for d := range r.depth {
		for w := range r.width {
			ev, _ := bus.NewEvent(bus.TypeTaskRequested, "raw", schemas.TaskRequest{TimeoutMS: 60000})
			ev.ID = fmt.Sprintf("%s-%d-%d", key, d, w)
			ev.SetExt(bus.ExtReplyTo, r.replyTo+"."+key)
			ev.SetExt(bus.ExtDeadline, time.Now().Add(time.Minute).UTC().Format(time.RFC3339))
			msg, _ := bus.Encode(r.subject, ev)
			msg.Header.Set(jetstream.MsgIDHeader, ev.ID)
			if _, err := r.js.PublishMsg(ctx, msg); err != nil {
				b.Fatal(err)
			}
		}
		for range r.width {
			msg, err := r.it.Next()
			if err != nil {
				b.Fatal(err)
			}
			if rev, err = r.m.Res.Runs.Update(ctx, key, []byte(fmt.Sprintf(`{"step":%d}`, d)), rev); err != nil {
				b.Fatal(err)
			}
			_ = msg.Ack()
		}
	}
	return time.Since(start)
}
