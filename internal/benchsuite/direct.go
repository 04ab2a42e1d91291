package benchsuite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// DirectAgentName names the agent DirectCall serves.
const DirectAgentName = "BenchDirectAgent"

// DirectCall compares one no-op task sent to the agent's micro endpoint
// (mesh.call.<agent>: build the event, request, decode the result event)
// with a core NATS request-reply of the same encoded event to an echo
// responder on the same server. Both report p50-ns. The returned closer
// stops the agent and the responder.
func DirectCall(ctx context.Context, env Env) (Pair, io.Closer, error) {
	noop := agents.Func(schemas.AgentContract{Name: DirectAgentName, Capability: schemas.CapEvaluation, Description: "does nothing, for benchmarks"},
		func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.AgentResult{Success: true}, nil
		})
	rt, err := agents.NewRuntime(env.NC, noop, agents.WithNames(env.Names))
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
	echo, err := env.NC.Subscribe("bench.echo.direct", func(m *nats.Msg) { _ = m.RespondMsg(&nats.Msg{Header: m.Header, Data: m.Data}) })
	if err != nil {
		stop()
		return Pair{}, nil, err
	}
	closer := closerFunc(func() error {
		stop()
		return errors.Join(echo.Unsubscribe(), <-done)
	})
	subj, _ := env.Names.Call(DirectAgentName)
	event := func(b *testing.B, subject string) *nats.Msg {
		ev, err := bus.NewEvent(bus.TypeTaskRequested, "/bench", []byte(`{}`))
		if err != nil {
			fail(b, err)
		}
		msg, err := bus.Encode(subject, ev)
		if err != nil {
			fail(b, err)
		}
		return msg
	}
	p := Pair{
		ID: "direct-call", Name: "direct call (no-op agent, micro endpoint)", Unit: "call", Baseliner: "nats.go core request-reply of the same event",
		Baseline: func(b *testing.B) {
			msg := event(b, "bench.echo.direct")
			measure(b, func() (time.Duration, error) {
				return timed(func() error { _, err := env.NC.RequestMsg(msg, 5*time.Second); return err })
			})
		},
		Mesh: func(b *testing.B) {
			measure(b, func() (time.Duration, error) {
				return timed(func() error {
					reply, err := env.NC.RequestMsg(event(b, subj), 5*time.Second)
					if err != nil {
						return err
					}
					rev, err := bus.Decode(reply)
					if err != nil {
						return err
					}
					var res schemas.AgentResult
					if err := rev.DataAs(&res); err != nil || !res.Success {
						return fmt.Errorf("result %+v, %v", res, err)
					}
					return nil
				})
			})
		},
	}
	return p, closer, nil
}
