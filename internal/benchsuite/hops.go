package benchsuite

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
)

// The task scenarios (task-round-trip, direct-call, durable-hop,
// throughput, scale-sleep) and the pipeline scenarios compare like with
// like: where the runner can start processes (Env.Launch: agentmesh bench
// and go test -bench Suite), the mesh's agents run in one process
// (RoleHopAgents, RolePipelineAgents, with an orchestrator process for
// pipelines) and the baselines' responders and workers in another
// (RoleHopBaseline), each apart from the benchmark's own process, which
// sends the tasks and holds the NATS server. Without Launch (the packages'
// own benchmarks) both sides run in the benchmark's process.
const (
	// RoleHopAgents serves the task scenarios' agents.
	RoleHopAgents Role = "hop-agents"
	// RoleHopBaseline runs the task scenarios' baselines: the core
	// request-reply responders and the hand-written JetStream workers.
	RoleHopBaseline Role = "hop-baseline"
	// RolePipelineAgents serves the pipeline scenarios' agents.
	RolePipelineAgents Role = "pipeline-agents"
	// RolePipelineOrchestrator runs the pipeline scenarios' orchestrator
	// replica; it is ready once it sees their agents.
	RolePipelineOrchestrator Role = "pipeline-orchestrator"
)

// runHopAgents serves every agent of the task scenarios on env until the
// returned closer is closed.
func runHopAgents(ctx context.Context, env Env) (io.Closer, error) {
	served := []struct {
		agent     agents.Agent
		instances int
	}{
		{noopAgent(NoopAgentName), 1},
		{noopAgent(DirectAgentName), 1},
		{durableHop().Agent, 1},
		{noopAgent(ThroughputAgentName), ThroughputInstances},
		{sleeper(scaleOne), 1},
		{sleeper(scaleMany), ScaleInstances},
	}
	var closers closeList
	for _, s := range served {
		for range s.instances {
			c, err := Serve(ctx, env, s.agent)
			if err != nil {
				return nil, errors.Join(fmt.Errorf("agent %s: %w", s.agent.Contract().Name, err), closers.Close())
			}
			closers = append(closers, c)
		}
	}
	return closers, nil
}

// runHopBaseline runs the task scenarios' baselines on env until the
// returned closer is closed.
func runHopBaseline(ctx context.Context, env Env) (io.Closer, error) {
	var closers closeList
	for subj, handle := range map[string]nats.MsgHandler{
		echoTaskSubject:   func(m *nats.Msg) { _ = m.Respond(m.Data) },
		echoDirectSubject: echoMsg,
	} {
		sub, err := env.NC.Subscribe(subj, handle)
		if err != nil {
			return nil, errors.Join(err, closers.Close())
		}
		closers = append(closers, closerFunc(sub.Unsubscribe))
	}
	hop := durableHop()
	for _, w := range []struct {
		name      string
		instances int
		work      func([]byte) ([]byte, error)
	}{
		{hopWorkerName(hop.ID), 1, hop.Work},
		{throughputWorker, ThroughputInstances, noopWork},
	} {
		rw, err := startRawWorker(ctx, env, w.name, w.instances, w.work)
		if err != nil {
			return nil, errors.Join(err, closers.Close())
		}
		closers = append(closers, rw)
	}
	return closers, nil
}

// hopScenario makes the task scenarios: as processes with env.Launch,
// else in this process.
func hopScenario() scenario {
	return scenario{
		ids: []string{"task-round-trip", "direct-call", "durable-hop", "throughput", "scale-sleep"},
		make: func(ctx context.Context, env Env) ([]Pair, io.Closer, error) {
			if env.Launch == nil {
				return inProcess(ctx, env, TaskRoundTrip, DirectCall, DurableHop, Throughput, Scale)
			}
			procs, err := startRoles(env, RoleHopAgents, RoleHopBaseline)
			if err != nil {
				return nil, nil, err
			}
			hop := durableHop()
			return []Pair{
				taskRoundTripPair(ctx, env),
				directCallPair(env),
				hopPair(ctx, env, hop, rawWorkerView(env, hopWorkerName(hop.ID))),
				throughputPair(env, rawWorkerView(env, throughputWorker)),
				scalePair(env),
			}, procs, nil
		},
	}
}

// inProcess makes the pairs of makers in this process.
func inProcess(ctx context.Context, env Env, makers ...func(context.Context, Env) (Pair, io.Closer, error)) ([]Pair, io.Closer, error) {
	var (
		pairs   []Pair
		closers closeList
	)
	for _, mk := range makers {
		p, c, err := mk(ctx, env)
		if err != nil {
			return nil, nil, errors.Join(err, closers.Close())
		}
		pairs, closers = append(pairs, p), append(closers, c)
	}
	return pairs, closers, nil
}

// startRoles starts a process for each role, against env's mesh, in
// order; the returned closer stops them in reverse order.
func startRoles(env Env, roles ...Role) (io.Closer, error) {
	var procs closeList
	for _, role := range roles {
		p, err := startRole(env.Launch(role, env.Names), role)
		if err != nil {
			return nil, errors.Join(err, procs.Close())
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// closeList closes its closers in reverse order, joining their errors.
type closeList []io.Closer

func (l closeList) Close() error {
	var errs []error
	for i := len(l) - 1; i >= 0; i-- {
		errs = append(errs, l[i].Close())
	}
	return errors.Join(errs...)
}

// processEnv is the Env a role's process runs with on nc.
func processEnv(nc *nats.Conn, names bus.Names) (Env, error) {
	js, err := jetstream.New(nc)
	return Env{NC: nc, JS: js, Names: names}, err
}
