package pipeline

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// repeat runs its agent once per iteration, one at a time: the first
// iteration's inputs are built as any step's, each next one's have the
// previous iteration's outputs in place of the inputs of the same name
// (else of a data type they feed). After each iteration repeat.until is
// evaluated with output.<name> (that iteration's outputs, as JSON) and
// iteration (its number, from 1): when it holds, or after
// repeat.max_iterations, the step completes with the last iteration's
// outputs and a summary that says which. An iteration that fails fails
// the step.
type repeat struct{}

// untilNames are the names repeat.until reads beyond a condition's.
func untilNames(outputs map[string]any, iteration int) map[string]any {
	if outputs == nil {
		outputs = map[string]any{}
	}
	return map[string]any{"output": outputs, "iteration": iteration}
}

func (repeat) prepare(ctx context.Context, e env, st stepStart) (*state.LoopItems, *state.LoopProgress, error) {
	sd, id := st.sd, st.id
	step, _ := sd.Step(id)
	inputs, err := stepInputs(ctx, e.config().router, sd, id,
		func(p string) (*state.StepState, error) { return e.record(ctx, sd.ID, p) },
		func() (map[string]schemas.TypedValue, error) { return e.store().RunSlots(ctx, sd.ID) })
	if err != nil {
		return nil, nil, err
	}
	return &state.LoopItems{Base: inputs}, &state.LoopProgress{N: step.Repeat.MaxIterations, Parallel: 1}, nil
}

func (repeat) inputs(ctx context.Context, e env, sd *state.RunSpec, id string, items *state.LoopItems, i int) (map[string]schemas.TypedValue, error) {
	in := maps.Clone(items.Base)
	if in == nil {
		in = map[string]schemas.TypedValue{}
	}
	if i == 0 {
		return in, nil
	}
	prev, err := e.store().ItemRecord(ctx, sd.ID, id, i-1)
	if err != nil {
		return nil, err
	}
	step, _ := sd.Step(id)
	c := sd.Contracts[step.Agent]
	fed := map[string]bool{}
	names := slices.Sorted(maps.Keys(prev.Outputs))
	for _, name := range names { // by name first
		if ci, ok := c.Input(name); ok && route.Feeds(prev.Outputs[name].DataType, prev.Outputs[name].ContentTypeHint, ci) {
			in[name], fed[name] = prev.Outputs[name], true
		}
	}
	for _, name := range names { // then by data type
		v := prev.Outputs[name]
		for _, ci := range c.Inputs {
			if !fed[ci.Name] && route.Feeds(v.DataType, v.ContentTypeHint, ci) {
				in[ci.Name], fed[ci.Name] = v, true
				break
			}
		}
	}
	return in, nil
}

func (repeat) decide(ctx context.Context, e env, sd *state.RunSpec, id string, p *state.LoopProgress, i int, rec *state.StepState) (string, string, error) {
	if rec.Status != schemas.StepCompleted {
		return fmt.Sprintf("iteration %d (task %s) failed: %s", i+1, rec.TaskID, rec.Error), rec.Code, nil
	}
	step, _ := sd.Step(id)
	outs := map[string]any{}
	for name, tv := range rec.Outputs {
		outs[name] = jsonValue(tv)
	}
	ok, err := e.holds(ctx, sd, id, step.Repeat.Until, untilNames(outs, i+1))
	switch {
	case err != nil:
		return fmt.Sprintf("repeat.until after iteration %d: %v", i+1, err), schemas.CodeInvalidInput, nil
	case ok:
		return fmt.Sprintf("%q held after iteration %d", step.Repeat.Until, i+1), "", nil
	case i+1 >= p.N:
		return fmt.Sprintf("stopped at max_iterations %d: %q never held", p.N, step.Repeat.Until), "", nil
	}
	return "", "", nil
}

func (repeat) finish(ctx context.Context, e env, sd *state.RunSpec, h *state.RunHeader, id string, p *state.LoopProgress) (*state.StepState, error) {
	now := time.Now().UTC()
	if p.Code != "" {
		return failedRecord(sd, h, id, p.Code, p.Stop, now), nil
	}
	recs, err := itemRecords(ctx, e, sd.ID, id, p.Next)
	if err != nil {
		return nil, err
	}
	rec := loopRecord(sd, h, id, recs, now)
	last := recs[len(recs)-1]
	rec.Outputs, rec.Summary = last.Outputs, p.Stop
	if last.Summary != "" {
		rec.Summary += ": " + last.Summary
	}
	return rec, nil
}
