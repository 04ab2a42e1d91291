package benchsuite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// The agents of the pipeline scenarios: one with nothing to route, one
// with an output the orchestrator routes into the run's state, as every
// real agent has.
const (
	pipeNoop = "BenchPipeNoop"
	pipeEmit = "BenchPipeEmit"
)

// pipeShape is one pipeline scenario: width chains of depth steps of agent.
type pipeShape struct {
	id, agent    string
	width, depth int
}

var pipeShapes = []pipeShape{
	{"pipeline-chain100-outputs", pipeEmit, 1, 100},
	{"pipeline-wide10x100", pipeNoop, 10, 100},
}

// Pipelines compares whole pipelines run by an orchestrator with the same
// sequence written against nats.go: each wave's tasks published to the
// same agents, their results consumed from MESH_RESULTS and a KV key
// updated per result. One operation is one pipeline; the ratio of the two
// is the orchestrator's per-step overhead. With env.Launch the agents and
// the orchestrator are processes of their own (RolePipelineAgents,
// RolePipelineOrchestrator) and the hand-driven side runs in this process,
// where the mesh side's client runs; without it all run here. The
// returned closer stops the orchestrator and the agents.
func Pipelines(ctx context.Context, env Env) ([]Pair, io.Closer, error) {
	var closers []io.Closer
	closeAll := closerFunc(func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i].Close())
		}
		return errors.Join(errs...)
	})
	if env.Launch != nil {
		procs, err := startRoles(env, RolePipelineAgents, RolePipelineOrchestrator)
		if err != nil {
			return nil, nil, err
		}
		closers = append(closers, procs)
	} else {
		c, err := runPipelineAgents(ctx, env)
		if err != nil {
			return nil, nil, err
		}
		closers = append(closers, c)
		if c, err = startOrchestrator(ctx, env, pipeNoop, pipeEmit); err != nil {
			return nil, nil, errors.Join(err, closeAll.Close())
		}
		closers = append(closers, c)
	}
	var pairs []Pair
	for _, sh := range pipeShapes {
		raw, err := newRawPipeline(ctx, env, sh)
		if err != nil {
			return nil, nil, errors.Join(err, closeAll.Close())
		}
		closers = append(closers, raw)
		pairs = append(pairs, Pair{
			ID:        sh.id,
			Name:      fmt.Sprintf("pipeline %dx%d of %s", sh.width, sh.depth, sh.agent),
			Unit:      "pipeline",
			Baseliner: "the same waves of tasks by hand: publish, consume results, update a KV key",
			Baseline: func(b *testing.B) {
				measure(b, func() (time.Duration, error) { return raw.run(ctx) })
			},
			Mesh: func(b *testing.B) {
				measure(b, func() (time.Duration, error) { return runPipeline(ctx, env, sh) })
			},
		})
	}
	return pairs, closeAll, nil
}

// runPipelineAgents serves the pipeline scenarios' agents on env until the
// returned closer is closed.
func runPipelineAgents(ctx context.Context, env Env) (io.Closer, error) {
	var closers closeList
	for _, a := range []agents.Agent{pipeAgent(pipeNoop, nil), pipeAgent(pipeEmit, []byte(`"word"`))} {
		c, err := Serve(ctx, env, a, agents.WithConcurrency(16))
		if err != nil {
			return nil, errors.Join(err, closers.Close())
		}
		closers = append(closers, c)
	}
	return closers, nil
}

// pipeAgent answers every task at once, with output "text" holding value
// when value is not nil.
func pipeAgent(name string, value []byte) agents.Agent {
	c := schemas.AgentContract{Name: name, Capability: schemas.CapTransformation, Description: "answers at once, for benchmarks"}
	var outs map[string]schemas.TypedValue
	if value != nil {
		c.Outputs = []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}
		outs = map[string]schemas.TypedValue{"text": {DataType: schemas.TypeText, Value: value}}
	}
	return agents.Func(c, func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
		return schemas.AgentResult{Success: true, Agent: name, Outputs: outs}, nil
	})
}

// startOrchestrator runs an orchestrator replica on env until the returned
// closer is closed; it returns once the replica sees every named agent.
func startOrchestrator(ctx context.Context, env Env, wait ...string) (io.Closer, error) {
	o, err := orchestrator.New(env.NC, orchestrator.WithNames(env.Names),
		orchestrator.WithStateOptions(state.WithMaxStateBytes(900<<10)))
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- o.RunReady(runCtx, func() { close(ready) }) }()
	closer := closerFunc(func() error { stop(); return <-done })
	select {
	case <-ready:
	case err := <-done:
		stop()
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, a := range wait {
		if err := o.Registry().Wait(wctx, a, 1); err != nil {
			return nil, errors.Join(err, closer.Close())
		}
	}
	return closer, nil
}

// runPipeline submits the shape as a new run and returns how long it took
// to complete, awaiting the run's end event.
func runPipeline(ctx context.Context, env Env, sh pipeShape) (time.Duration, error) {
	p := client.NewPipeline("bench")
	for d := range sh.depth {
		for w := range sh.width {
			p.Step(fmt.Sprintf("s%d-%d", d, w), sh.agent)
			if d > 0 {
				p.After(fmt.Sprintf("s%d-%d", d-1, w))
			}
		}
	}
	spec, err := p.Build()
	if err != nil {
		return 0, err
	}
	return awaitRun(ctx, env, spec, fmt.Sprintf("bench-%s-%d", sh.id, time.Now().UnixNano()), nil)
}

// awaitRun submits spec as run id and returns how long it took to
// complete, awaiting the run's end event; a run that ends otherwise than
// completed is an error. stepDone, when not nil, is called on each step's
// completed event (on the subscription's goroutine, in order).
func awaitRun(ctx context.Context, env Env, spec pipelinespec.PipelineSpec, id string, stepDone func()) (time.Duration, error) {
	ended := make(chan *nats.Msg, 1)
	sub, err := env.NC.Subscribe(env.Names.EventsOf(id), func(msg *nats.Msg) {
		if stepDone != nil && msg.Header.Get("ce-type") == bus.TypeStepCompleted {
			stepDone()
		}
		if msg.Header.Get("ce-type") == bus.TypePipelineCompleted {
			select {
			case ended <- msg:
			default:
			}
		}
	})
	if err != nil {
		return 0, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := env.NC.Flush(); err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := client.SubmitPipeline(ctx, env.JS, env.Names, spec, id, "bench"); err != nil {
		return 0, err
	}
	select {
	case msg := <-ended:
		took := time.Since(start)
		var re schemas.RunEvent
		ev, err := bus.Decode(msg)
		if err == nil {
			err = ev.DataAs(&re)
		}
		if err == nil && re.Status != schemas.RunCompleted {
			err = fmt.Errorf("run %s ended %s", id, re.Status)
		}
		return took, err
	case <-time.After(2 * time.Minute):
		return 0, fmt.Errorf("run %s did not end within two minutes", id)
	}
}

// rawPipeline is the baseline of a pipeline scenario: the same waves of
// tasks to the same agent, each result consumed from MESH_RESULTS (outside
// the orchestrator's result subjects) and counted in a KV update.
type rawPipeline struct {
	env           Env
	sh            pipeShape
	subject, into string
	resultsReader
}

func newRawPipeline(ctx context.Context, env Env, sh pipeShape) (*rawPipeline, error) {
	r := &rawPipeline{env: env, sh: sh}
	r.subject, _ = env.Names.Task(sh.agent) // the name is valid
	r.into = env.Names.Result(sh.agent, "rawbench")
	rr, err := readResults(ctx, env, "bench-raw-"+sh.id, r.into+".>", jetstream.DeliverAllPolicy)
	if err != nil {
		return nil, fmt.Errorf("baseline consumer: %w", err)
	}
	r.resultsReader = rr
	return r, nil
}

// run runs one pipeline and returns how long it took.
func (r *rawPipeline) run(ctx context.Context) (time.Duration, error) {
	key := fmt.Sprintf("raw-%s-%d", r.sh.id, time.Now().UnixNano())
	start := time.Now()
	rev, err := r.env.Res.Runs.Create(ctx, key, []byte(`{"step":0}`))
	if err != nil {
		return 0, err
	}
	defer func() { _ = r.env.Res.Runs.Purge(context.Background(), key) }()
	for d := range r.sh.depth {
		for w := range r.sh.width {
			ev, err := bus.NewEvent(bus.TypeTaskRequested, "/bench/raw", schemas.TaskRequest{TimeoutMS: 60000})
			if err != nil {
				return 0, err
			}
			ev.ID = fmt.Sprintf("%s-%d-%d", key, d, w)
			ev.SetExt(bus.ExtReplyTo, r.into+"."+key)
			ev.SetExt(bus.ExtDeadline, time.Now().Add(time.Minute).UTC().Format(time.RFC3339))
			msg, err := bus.Encode(r.subject, ev)
			if err != nil {
				return 0, err
			}
			msg.Header.Set(jetstream.MsgIDHeader, ev.ID)
			if _, err := r.env.JS.PublishMsg(ctx, msg); err != nil {
				return 0, err
			}
		}
		for range r.sh.width {
			msg, err := r.it.Next(jetstream.NextMaxWait(time.Minute))
			if err != nil {
				return 0, err
			}
			if rev, err = r.env.Res.Runs.Update(ctx, key, fmt.Appendf(nil, `{"step":%d}`, d), rev); err != nil {
				return 0, err
			}
			_ = msg.Ack()
		}
	}
	return time.Since(start), nil
}
