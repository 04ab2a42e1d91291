package benchsuite

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// NoopAgentName names the agent TaskRoundTrip serves.
const NoopAgentName = "BenchNoopAgent"

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// ServeNoop runs a no-op agent called name on env's connection with opts
// until the returned closer is closed.
func ServeNoop(ctx context.Context, env Env, name string, opts ...agents.Option) (io.Closer, error) {
	return Serve(ctx, env, noopAgent(name), opts...)
}

// noopAgent is an agent called name that answers every task at once.
func noopAgent(name string) agents.Agent {
	return agents.Func(schemas.AgentContract{Name: name, Capability: schemas.CapEvaluation, Description: "does nothing, for benchmarks"},
		func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.AgentResult{Success: true}, nil
		})
}

// Serve runs agent a on env's agent connection with opts until the
// returned closer is closed; it returns once the agent is ready.
func Serve(ctx context.Context, env Env, a agents.Agent, opts ...agents.Option) (io.Closer, error) {
	agentNC := env.AgentNC
	if agentNC == nil {
		agentNC = env.NC
	}
	rt, err := agents.NewRuntime(agentNC, a, append([]agents.Option{agents.WithNames(env.Names)}, opts...)...)
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()
	select {
	case <-rt.Ready():
	case err := <-done:
		stop()
		return nil, err
	}
	return closerFunc(func() error { stop(); return <-done }), nil
}

// RoundTrip publishes one empty task for agent to MESH_TASKS and waits for
// its result; it returns the time that took.
func RoundTrip(ctx context.Context, env Env, agent string) (time.Duration, error) {
	d, _, err := RoundTripData(ctx, env, agent, []byte(`{}`))
	return d, err
}

// RoundTripData publishes one task for agent with data (a task.requested
// payload) to MESH_TASKS and waits for its result on the result subject;
// it returns the time that took and the result message.
func RoundTripData(ctx context.Context, env Env, agent string, data []byte) (time.Duration, *nats.Msg, error) {
	subj, err := env.Names.Task(agent)
	if err != nil {
		return 0, nil, err
	}
	js, err := callerJS(env)
	if err != nil {
		return 0, nil, err
	}
	start := time.Now()
	ev, err := bus.NewEvent(bus.TypeTaskRequested, "/bench", data)
	if err != nil {
		return 0, nil, err
	}
	replyTo := env.Names.Result(agent, ev.ID)
	if env.Client != "" {
		// A client of a secure mesh reads only its own result subjects.
		replyTo = env.Names.ClientResult(agent, env.Client, ev.ID)
		ev.SetExt(bus.ExtReplyTo, replyTo)
	}
	sub, err := env.NC.SubscribeSync(replyTo)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	msg, err := bus.Encode(subj, ev)
	if err != nil {
		return 0, nil, err
	}
	if err := bus.SignTask(env.NC, msg); err != nil { // a secure mesh's agent answers signed tasks only
		return 0, nil, err
	}
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		return 0, nil, err
	}
	res, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		return 0, nil, err
	}
	return time.Since(start), res, nil
}

// callerJS is a JetStream context on env.NC, the connection results are
// awaited on: a task published on another connection could reach the
// server before the subscription to its result, and the result be lost.
func callerJS(env Env) (jetstream.JetStream, error) {
	if env.JS != nil && env.JS.Conn() == env.NC {
		return env.JS, nil
	}
	return jetstream.New(env.NC)
}

// TaskRoundTrip compares one no-op task dispatched through MESH_TASKS and its
// result received (the agent runtime in this process) with a core NATS
// request-reply to an echo responder on the same server. Both report p50-ns.
// The returned closer stops the agent and the responder.
func TaskRoundTrip(ctx context.Context, env Env) (Pair, io.Closer, error) {
	agent, err := ServeNoop(ctx, env, NoopAgentName)
	if err != nil {
		return Pair{}, nil, err
	}
	// The baseline's responder; a client of a secure mesh (Client set) may
	// not serve bench.echo, and only the mesh side is measured there.
	var echo *nats.Subscription
	if env.Client == "" {
		if echo, err = env.NC.Subscribe(echoTaskSubject, func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
			return Pair{}, nil, errors.Join(err, agent.Close())
		}
	}
	closer := closerFunc(func() error {
		var uerr error
		if echo != nil {
			uerr = echo.Unsubscribe()
		}
		return errors.Join(uerr, agent.Close())
	})
	return taskRoundTripPair(ctx, env), closer, nil
}

// echoTaskSubject is the subject of task-round-trip's baseline responder.
const echoTaskSubject = "bench.echo"

// taskRoundTripPair is the task-round-trip comparison, the agent and the
// responder running wherever they run.
func taskRoundTripPair(ctx context.Context, env Env) Pair {
	return Pair{
		ID: "task-round-trip", Name: "task round trip (no-op agent)", Unit: "round trip", Baseliner: "nats.go core request-reply",
		Baseline: func(b *testing.B) {
			measure(b, func() (time.Duration, error) {
				return timed(func() error { _, err := env.NC.Request(echoTaskSubject, []byte(`{}`), 5*time.Second); return err })
			})
		},
		Mesh: func(b *testing.B) {
			measure(b, func() (time.Duration, error) { return RoundTrip(ctx, env, NoopAgentName) })
		},
	}
}
