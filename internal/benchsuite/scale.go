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

// ScaleInstances is how many instances the mesh side of Scale runs; the
// baseline side runs one.
const ScaleInstances = 4

// ScaleTaskTime is how long each task of Scale sleeps.
const ScaleTaskTime = 10 * time.Millisecond

// Scale compares the rate of tasks that each sleep ScaleTaskTime through
// ScaleInstances instances of an agent (default concurrency) with the rate
// through one instance of the same agent: the throughput ratio is how
// well the agent scales by adding instances (issue 16's target is 3.5x
// for 4). All tasks are published asynchronously, then every result is
// awaited, as in Throughput. The returned closer stops every instance.
func Scale(ctx context.Context, env Env) (Pair, io.Closer, error) {
	one, many := scaleOne, scaleMany
	var closers []io.Closer
	closeAll := closerFunc(func() error {
		var errs []error
		for _, c := range closers {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	})
	for i := range 1 + ScaleInstances {
		name := many
		if i == 0 {
			name = one
		}
		c, err := Serve(ctx, env, sleeper(name))
		if err != nil {
			return Pair{}, nil, errors.Join(err, closeAll.Close())
		}
		closers = append(closers, c)
	}
	return scalePair(env), closeAll, nil
}

// The agents of Scale: one instance of the first, ScaleInstances of the
// second.
const (
	scaleOne  = "BenchSleepOne"
	scaleMany = "BenchSleepMany"
)

// scalePair is the scale comparison, the instances running wherever they
// run.
func scalePair(env Env) Pair {
	side := func(agent string) func(b *testing.B) {
		subj, _ := env.Names.Task(agent) // the names are valid
		return func(b *testing.B) {
			burst(b, env, env.Names.AgentResults(agent), func(int) (*nats.Msg, error) {
				ev, err := bus.NewEvent(bus.TypeTaskRequested, "/bench", []byte(`{}`))
				if err != nil {
					return nil, err
				}
				return bus.Encode(subj, ev)
			})
		}
	}
	return Pair{
		ID: "scale-sleep",
		Name: fmt.Sprintf("scale (agent sleeping %s per task, %d instances vs 1, concurrency %d each)",
			ScaleTaskTime, ScaleInstances, agents.DefaultConcurrency),
		Unit:      "task",
		Baseliner: "1 instance of the same agent",
		Baseline:  side(scaleOne),
		Mesh:      side(scaleMany),
	}
}

// sleeper is an agent whose every task sleeps ScaleTaskTime.
func sleeper(name string) agents.Agent {
	return agents.Func(schemas.AgentContract{Name: name, Capability: schemas.CapEvaluation, Description: "sleeps, for benchmarks"},
		func(ctx context.Context, _ *schemas.ExecutionContext) (schemas.AgentResult, error) {
			select {
			case <-time.After(ScaleTaskTime):
			case <-ctx.Done():
				return schemas.AgentResult{}, ctx.Err()
			}
			return schemas.AgentResult{Success: true}, nil
		})
}
