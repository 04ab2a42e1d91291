package benchsuite

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// NoopAgentName names the agent TaskRoundTrip serves.
const NoopAgentName = "BenchNoopAgent"

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// TaskRoundTrip compares one no-op task dispatched through MESH_TASKS and its
// result received (the agent runtime in this process) with a core NATS
// request-reply to an echo responder on the same server. Both report p50-ns.
// The returned closer stops the agent and the responder.
func TaskRoundTrip(ctx context.Context, env Env) (Pair, io.Closer, error) {
	noop := agents.Func(schemas.AgentContract{Name: NoopAgentName, Capability: schemas.CapEvaluation, Description: "does nothing, for benchmarks"},
		func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.AgentResult{Success: true}, nil
		})
	agentNC := env.AgentNC
	if agentNC == nil {
		agentNC = env.NC
	}
	rt, err := agents.NewRuntime(agentNC, noop, agents.WithNames(env.Names))
	if err != nil {
		return Pair{}, nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()
	select {
	case <-rt.Ready():
	case err := <-done:
		stop()
		return Pair{}, nil, err
	}
	// The baseline's responder; a client of a secure mesh (Client set) may
	// not serve bench.echo, and only the mesh side is measured there.
	var echo *nats.Subscription
	if env.Client == "" {
		if echo, err = env.NC.Subscribe("bench.echo", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
			stop()
			return Pair{}, nil, err
		}
	}
	closer := closerFunc(func() error {
		stop()
		var uerr error
		if echo != nil {
			uerr = echo.Unsubscribe()
		}
		return errors.Join(uerr, <-done)
	})
	subj, _ := env.Names.Task(NoopAgentName)
	p := Pair{
		Name: "task round trip (no-op agent)", Unit: "round trip", Baseliner: "nats.go core request-reply",
		Baseline: func(b *testing.B) {
			durs := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if _, err := env.NC.Request("bench.echo", []byte(`{}`), 5*time.Second); err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(start))
			}
			recordP50(b, durs)
		},
		Mesh: func(b *testing.B) {
			durs := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				ev, err := bus.NewEvent(bus.TypeTaskRequested, "/bench", []byte(`{}`))
				if err != nil {
					b.Fatal(err)
				}
				replyTo := env.Names.Result(NoopAgentName, ev.ID)
				if env.Client != "" {
					replyTo = env.Names.ClientResult(NoopAgentName, env.Client, ev.ID)
					ev.SetExt(bus.ExtReplyTo, replyTo)
				}
				sub, err := env.NC.SubscribeSync(replyTo)
				if err != nil {
					b.Fatal(err)
				}
				msg, err := bus.Encode(subj, ev)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := env.JS.PublishMsg(ctx, msg); err != nil {
					b.Fatal(err)
				}
				if _, err := sub.NextMsg(10 * time.Second); err != nil {
					b.Fatal(err)
				}
				_ = sub.Unsubscribe()
				durs = append(durs, time.Since(start))
			}
			recordP50(b, durs)
		},
	}
	return p, closer, nil
}
