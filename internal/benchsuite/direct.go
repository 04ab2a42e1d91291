package benchsuite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

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
	agent, err := ServeNoop(ctx, env, DirectAgentName)
	if err != nil {
		return Pair{}, nil, err
	}
	echo, err := env.NC.Subscribe(echoDirectSubject, echoMsg)
	if err != nil {
		return Pair{}, nil, errors.Join(err, agent.Close())
	}
	closer := closerFunc(func() error { return errors.Join(echo.Unsubscribe(), agent.Close()) })
	return directCallPair(env), closer, nil
}

// echoDirectSubject is the subject of direct-call's baseline responder.
const echoDirectSubject = "bench.echo.direct"

// echoMsg answers a request with its own headers and data.
func echoMsg(m *nats.Msg) { _ = m.RespondMsg(&nats.Msg{Header: m.Header, Data: m.Data}) }

// directCallPair is the direct-call comparison, the agent and the
// responder running wherever they run.
func directCallPair(env Env) Pair {
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
	return Pair{
		ID: "direct-call", Name: "direct call (no-op agent, micro endpoint)", Unit: "call", Baseliner: "nats.go core request-reply of the same event",
		Baseline: func(b *testing.B) {
			msg := event(b, echoDirectSubject)
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
}
