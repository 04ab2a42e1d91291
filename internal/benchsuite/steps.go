package benchsuite

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nuid"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// Agents of the step-journal scenarios.
const (
	journalOnAgent  = "BenchJournalOn"
	journalOffAgent = "BenchJournalOff"
	stepAgent       = "BenchStep"
	kvPutAgent      = "BenchKVPut"
)

// stepValue is what the step and the raw put write: 100 bytes.
var stepValue = strings.Repeat("s", 98)

// StepJournal compares the step journal's cost (docs/durability.md), each
// side a task round trip to an agent in this process:
//
//   - task-no-steps: a no-op agent with the journal on (the default)
//     against the same agent with WithJournal(false), today's path
//     before the journal: a task that takes no steps should cost the same;
//   - step-recorded: an agent whose task records one step of 100 bytes
//     against one that makes one raw KV put of the same bytes in the same
//     bucket: a recorded step should cost one KV write round trip.
func StepJournal(ctx context.Context, env Env) ([]Pair, io.Closer, error) {
	kv, err := bus.EnsureSteps(ctx, env.JS, env.Names)
	if err != nil {
		return nil, nil, err
	}
	var closers []io.Closer
	closeAll := closerFunc(func() error {
		var errs []error
		for _, c := range closers {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	})
	serve := func(a agents.Agent, opts ...agents.Option) error {
		c, err := Serve(ctx, env, a, opts...)
		if err == nil {
			closers = append(closers, c)
		}
		return err
	}
	agent := func(name string, body func(ctx context.Context, ec *schemas.ExecutionContext) error) agents.Agent {
		return agents.Func(schemas.AgentContract{Name: name, Capability: schemas.CapEvaluation, Description: "a step-journal benchmark agent"},
			func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
				if err := body(ctx, ec); err != nil {
					return schemas.AgentResult{}, err
				}
				return schemas.AgentResult{Success: true}, nil
			})
	}
	nothing := func(context.Context, *schemas.ExecutionContext) error { return nil }
	for _, s := range []struct {
		a    agents.Agent
		opts []agents.Option
	}{
		{agent(journalOnAgent, nothing), nil},
		{agent(journalOffAgent, nothing), []agents.Option{agents.WithJournal(false)}},
		{agent(stepAgent, func(ctx context.Context, ec *schemas.ExecutionContext) error {
			_, err := ec.Step(ctx, "bench", func(context.Context, string) (any, error) { return stepValue, nil })
			return err
		}), nil},
		{agent(kvPutAgent, func(ctx context.Context, _ *schemas.ExecutionContext) error {
			_, err := kv.Put(ctx, "bench."+nuid.Next(), []byte(`"`+stepValue+`"`))
			return err
		}), nil},
	} {
		if err := serve(s.a, s.opts...); err != nil {
			return nil, nil, errors.Join(err, closeAll.Close())
		}
	}
	roundTrip := func(agent string) func(b *testing.B) {
		return func(b *testing.B) {
			measure(b, func() (time.Duration, error) { return RoundTrip(ctx, env, agent) })
		}
	}
	return []Pair{
		{ID: "task-no-steps", Name: "task round trip, no steps, step journal on", Unit: "round trip",
			Baseliner: "the same agent with the journal off (WithJournal(false))",
			Baseline:  roundTrip(journalOffAgent), Mesh: roundTrip(journalOnAgent)},
		{ID: "step-recorded", Name: "task round trip recording one step of 100 bytes", Unit: "round trip",
			Baseliner: "the same task making one raw KV put of 100 bytes",
			Baseline:  roundTrip(kvPutAgent), Mesh: roundTrip(stepAgent)},
	}, closeAll, nil
}
