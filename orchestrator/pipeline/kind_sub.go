package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// KindPipeline is the kind of a step that runs another pipeline.
const KindPipeline = pipelinespec.StepKindPipeline

// subKind runs a step of kind pipeline: its child spec (resolved at
// submit, see resolveSubs) runs as a run of its own, <run>-<step>, seeded
// with the values pipeline.inputs maps; the child's end (follow, or the
// sweep when the replica that ended it died first) ends the step, with
// the outputs pipeline.outputs maps, or failed with the child's error.
type subKind struct{ oneTask }

// tend ends the step when its child run ended but the replica that ended
// it died before ending the step.
func (subKind) tend(ctx context.Context, e env, sd *state.RunSpec, _ *state.RunHeader, id string, _ time.Time) {
	sweepSub(ctx, e, sd, id)
}

// cancel cancels its child run, whose cancel stops the child's tasks.
func (subKind) cancel(ctx context.Context, e env, sd *state.RunSpec, id string, c stepCancel) {
	cancelChildren(ctx, e, sd, id, c, []string{subRunID(sd.ID, id)})
}

// subRunID is the id of the child run of step id of run.
func subRunID(run, id string) string { return run + "-" + id }

func (subKind) start(ctx context.Context, e env, st stepStart) (*state.StepState, error) {
	sd, id := st.sd, st.id
	step, _ := sd.Step(id)
	childID := subRunID(sd.ID, id)
	if ch, _, err := e.store().Header(ctx, childID); err == nil {
		if !ch.Done() {
			return nil, nil // started before (the sweep starts a step again)
		}
		csd, err := e.spec(ctx, childID)
		if err != nil {
			return nil, err
		}
		return subRecord(ctx, e, sd, st.h, id, csd, ch), nil
	} else if !errors.Is(err, state.ErrNotFound) {
		return nil, err
	}
	now := time.Now().UTC()
	spec, err := childSpec(ctx, e, sd, step)
	if err != nil {
		return failedRecord(sd, st.h, id, schemas.CodeInvalidInput, fmt.Sprintf("step %q (pipeline %s): %v", id, step.Pipeline.Ref(), err), now), nil
	}
	if err := runChild(ctx, e, sd, st.h, childID, spec, state.RunParent{Run: sd.ID, Step: id}); err != nil {
		var bad *childRefused
		if errors.As(err, &bad) {
			return failedRecord(sd, st.h, id, bad.code, fmt.Sprintf("step %q (pipeline %s): %v", id, step.Pipeline.Ref(), bad.err), now), nil
		}
		return nil, err
	}
	return nil, nil
}

// childRefused is a child spec that cannot run, with its code.
type childRefused struct {
	code string
	err  error
}

func (c *childRefused) Error() string { return c.err.Error() }

// runChild starts spec as run childID for parent (see env.startRun),
// saying so with the parent step's running event (for a for_each, for its
// first few items).
func runChild(ctx context.Context, e env, sd *state.RunSpec, h *state.RunHeader, childID string, spec pipelinespec.PipelineSpec, parent state.RunParent) error {
	step, _ := sd.Step(parent.Step)
	now := time.Now().UTC()
	return e.startRun(ctx, sd, childID, spec, parent, func() {
		if parent.Item == nil || *parent.Item < 3 {
			e.emitStep(sd, schemas.StepEvent{RunID: sd.ID, Step: parent.Step, Status: schemas.StepRunning, Wave: h.Wave, Attempt: 1,
				TaskID: childID, Reason: fmt.Sprintf("runs pipeline %s as run %s", step.Pipeline.Ref(), childID), At: now})
		}
	})
}

// itemRunID is the id of the child run of item i of for_each step id.
func itemRunID(run, id string, i int) string { return fmt.Sprintf("%s-%s-%d", run, id, i) }

// startItemRun starts the child run of item i of for_each step id, with
// the item as the child's seed value items.Input; an item whose child ran
// before (the sweep re-publishes the running items) is applied if the
// child ended.
func startItemRun(ctx context.Context, e env, k loopKind, sd *state.RunSpec, h *state.RunHeader, id string, items *state.LoopItems, i int) error {
	step, _ := sd.Step(id)
	childID := itemRunID(sd.ID, id, i)
	if ch, _, err := e.store().Header(ctx, childID); err == nil {
		if !ch.Done() {
			return nil
		}
		csd, err := e.spec(ctx, childID)
		if err != nil {
			return err
		}
		return endSub(ctx, e, csd, ch)
	} else if !errors.Is(err, state.ErrNotFound) {
		return err
	}
	spec := *step.Pipeline.Spec
	spec.Seed.Values = maps.Clone(spec.Seed.Values)
	item := items.Item(i, "for_each")
	var val any
	if err := json.Unmarshal(item.Value, &val); err != nil {
		return err
	}
	spec.Seed.Values[items.Input] = pipelinespec.SeedValue{DataType: item.DataType, ContentTypeHint: item.ContentTypeHint, Value: val}
	item0 := i
	err := runChild(ctx, e, sd, h, childID, spec, state.RunParent{Run: sd.ID, Step: id, Item: &item0})
	var bad *childRefused
	if errors.As(err, &bad) {
		rec := failedRecord(sd, h, id, bad.code, fmt.Sprintf("pipeline %s (run %s): %v", step.Pipeline.Ref(), childID, bad.err), time.Now().UTC())
		rec.TaskID = pipelinespec.LoopTaskID(sd.ID, id, i, sd.Nonce)
		return applyItemRecord(ctx, e, k, sd, h, id, i, rec)
	}
	return err
}

// childSpec is the child spec of step with the values its inputs map
// written into the child's seed values.
func childSpec(ctx context.Context, e env, sd *state.RunSpec, step pipelinespec.PipelineStep) (pipelinespec.PipelineSpec, error) {
	spec := *step.Pipeline.Spec
	spec.Seed.Values = maps.Clone(spec.Seed.Values)
	for _, name := range slices.Sorted(maps.Keys(step.Pipeline.Inputs)) {
		src := step.Pipeline.Inputs[name]
		v, found, err := source(sd, src, func(p string) (*state.StepState, error) { return e.record(ctx, sd.ID, p) },
			func() (map[string]schemas.TypedValue, error) { return e.store().RunSlots(ctx, sd.ID) })
		if err != nil {
			return spec, err
		}
		if !found {
			return spec, fmt.Errorf("%w: pipeline.inputs.%s maps to %s, which holds nothing", route.ErrMissingInput, name, src)
		}
		var val any
		if err := json.Unmarshal(v.Value, &val); err != nil {
			return spec, fmt.Errorf("pipeline.inputs.%s: %w", name, err)
		}
		if spec.Seed.Values == nil {
			spec.Seed.Values = map[string]pipelinespec.SeedValue{}
		}
		spec.Seed.Values[name] = pipelinespec.SeedValue{DataType: v.DataType, ContentTypeHint: v.ContentTypeHint, Value: val}
	}
	return spec, nil
}

// subRecord is the record of step id of sd whose child run (csd, ended
// as ch says) is over.
func subRecord(ctx context.Context, e env, sd *state.RunSpec, h *state.RunHeader, id string, csd *state.RunSpec, ch *state.RunHeader) *state.StepState {
	step, _ := sd.Step(id)
	now := time.Now().UTC()
	if ch.Status != schemas.RunCompleted {
		code := ch.Code
		if code == "" {
			code = schemas.CodeStepFailed
		}
		return failedRecord(sd, h, id, code, fmt.Sprintf("pipeline %s (run %s) failed: %s", step.Pipeline.Ref(), csd.ID, ch.Error), now)
	}
	rec := &state.StepState{ID: id, Wave: waveOf(sd, id), Status: schemas.StepCompleted, Attempt: 1, TaskID: pipelinespec.StepTaskID(sd.ID, id, 1, sd.Nonce),
		DispatchedAt: h.WaveStartedAt, Deadline: h.WaveStartedAt.Add(sd.Timeout(id)), FinishedAt: now,
		Metrics: schemas.Metrics{DurationMS: now.Sub(h.WaveStartedAt).Milliseconds(), Tokens: ch.Usage.Tokens, Cost: ch.Usage.Cost, ModelMS: ch.Usage.ModelMS}}
	outs := step.Pipeline.Outputs
	if len(outs) == 0 && len(csd.Waves) > 0 {
		outs = map[string]string{}
		for _, cid := range csd.Waves[len(csd.Waves)-1] {
			if r, err := e.store().StepRecord(ctx, csd.ID, cid); err == nil {
				for name := range r.Outputs {
					outs[name] = cid + "." + name
				}
			}
		}
	}
	var missing []string
	for _, name := range slices.Sorted(maps.Keys(outs)) {
		cid, out, _ := strings.Cut(outs[name], ".")
		r, err := e.store().StepRecord(ctx, csd.ID, cid)
		v, ok := schemas.TypedValue{}, false
		if err == nil {
			v, ok = r.Outputs[out]
		}
		if !ok {
			missing = append(missing, outs[name])
			continue
		}
		if rec.Outputs == nil {
			rec.Outputs = map[string]schemas.TypedValue{}
		}
		rec.Outputs[name] = v
	}
	rec.Summary = fmt.Sprintf("pipeline %s (run %s) completed", step.Pipeline.Ref(), csd.ID)
	if len(missing) > 0 {
		rec.Summary += "; it produced no " + strings.Join(missing, ", ")
	}
	return rec
}

// endSub ends the step a child run runs for, once the child ended as h
// says: the step's record, then its settling. A step that ended already
// (timed out, say) is left alone.
func endSub(ctx context.Context, e env, child *state.RunSpec, h *state.RunHeader) error {
	p := child.Parent
	sd, err := e.spec(ctx, p.Run)
	if err != nil {
		return err
	}
	ph, err := e.header(ctx, p.Run, true)
	if err != nil {
		return err
	}
	if !ph.Running(sd, p.Step) {
		return nil
	}
	if _, err := e.record(ctx, sd.ID, p.Step); !errors.Is(err, state.ErrNotFound) {
		return err // nil: the step ended already
	}
	rec := subRecord(ctx, e, sd, ph, p.Step, child, h)
	if p.Item != nil { // an item of a for_each
		k, ok := loopOf(sd, p.Step)
		if !ok {
			return nil
		}
		rec.TaskID = pipelinespec.LoopTaskID(sd.ID, p.Step, *p.Item, sd.Nonce)
		return applyItemRecord(ctx, e, k, sd, ph, p.Step, *p.Item, rec)
	}
	_, err = e.end(ctx, sd, rec)
	return err
}

// sweepSub ends step id of kind pipeline when its child run ended but the
// replica that ended it died before ending the step.
func sweepSub(ctx context.Context, e env, sd *state.RunSpec, id string) {
	childID := subRunID(sd.ID, id)
	ch, _, err := e.store().Header(ctx, childID)
	if err != nil || !ch.Done() {
		return
	}
	csd, err := e.spec(ctx, childID)
	if err == nil {
		err = endSub(ctx, e, csd, ch)
	}
	if err != nil {
		e.config().log.WarnContext(runContext(sd), "ending sub-pipeline step", "step", id, "err", err)
	}
}

// resolveSubs writes the spec of every step of kind pipeline that names
// one (pipeline.name) into it, from lookup, recursively; stack is the
// names being resolved, to refuse a cycle, and depth how deep they may
// nest below the top. A step naming a file the client did not resolve is
// refused.
func resolveSubs(spec pipelinespec.PipelineSpec, lookup func(string) (pipelinespec.PipelineSpec, error), stack []string, depth int) (pipelinespec.PipelineSpec, error) {
	var errs []error
	spec.Steps = slices.Clone(spec.Steps)
	for i, st := range spec.Steps {
		if st.Pipeline == nil {
			continue
		}
		p := *st.Pipeline
		switch {
		case p.Spec != nil:
		case p.Name != "" && slices.Contains(stack, p.Name):
			errs = append(errs, fmt.Errorf("step %q: %w: pipeline %s runs itself (%s -> %s); a sub-pipeline cannot run a pipeline it is part of",
				st.ID, ErrCycle, p.Name, strings.Join(stack, " -> "), p.Name))
			continue
		case p.Name != "" && lookup == nil:
			errs = append(errs, fmt.Errorf("step %q: pipeline %q: the orchestrator has no pipelines directory; start it with --pipelines DIR, or give the pipeline as file or spec", st.ID, p.Name))
			continue
		case p.Name != "":
			child, err := lookup(p.Name)
			if err != nil {
				errs = append(errs, fmt.Errorf("step %q: pipeline %q: %w", st.ID, p.Name, err))
				continue
			}
			p.Spec = &child
		default:
			errs = append(errs, fmt.Errorf("step %q: pipeline.file %q was not read; submit with a client that reads it (agentmesh run), or give the pipeline as name or spec", st.ID, p.File))
			continue
		}
		if len(stack) > depth { // stack holds this spec and the ones above it
			errs = append(errs, fmt.Errorf("step %q: %w", st.ID, &schemas.LimitError{Limit: "sub-pipeline nesting depth", Value: len(stack), Max: depth,
				Hint: "flatten the pipeline (run the inner pipelines as steps of an outer one), or raise the orchestrator's --max-pipeline-depth"}))
			continue
		}
		name := p.Name
		if name == "" {
			name = p.Spec.Name
		}
		child, err := resolveSubs(*p.Spec, lookup, append(slices.Clone(stack), name), depth)
		if err != nil {
			errs = append(errs, fmt.Errorf("step %q: %w", st.ID, err))
			continue
		}
		p.Spec = &child
		spec.Steps[i].Pipeline = &p
	}
	return spec, errors.Join(errs...)
}

// validate checks the child pipeline (see checkSub).
func (subKind) validate(c *checks, step pipelinespec.PipelineStep) []error { return checkSub(c, step) }

// checkSub validates the child of a step that runs a pipeline (of kind
// pipeline, or a for_each that runs one per item), as it would run: the
// seed values its inputs map must be declared by the child (they give
// their data types), its outputs must name child steps.
func checkSub(c *checks, st pipelinespec.PipelineStep) []error {
	if st.Pipeline == nil || st.Pipeline.Spec == nil {
		return nil
	}
	var errs []error
	p := st.Pipeline
	if st.Kind == pipelinespec.StepKindForEach {
		if _, err := itemSeed(st); err != nil {
			errs = append(errs, fmt.Errorf("step %q: %w", st.ID, err))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Inputs)) {
		if _, ok := p.Spec.Seed.Values[name]; !ok {
			errs = append(errs, fmt.Errorf("step %q: pipeline.inputs.%s: pipeline %s declares no seed value %q; declare it under its seed.values (with a default)", st.ID, name, p.Ref(), name))
		}
		src := p.Inputs[name]
		if _, lit := textLiteral(src); lit {
			continue
		}
		if head, _, _ := strings.Cut(src, "."); head != "seed" && head != "state" && !slices.Contains(ancestors(c.spec, st.ID), head) {
			errs = append(errs, fmt.Errorf("step %q: pipeline.inputs.%s: %s is not a seed, a slot, an output of a step this one depends on or a text: literal", st.ID, name, src))
		}
	}
	ids := map[string]bool{}
	for _, cs := range p.Spec.Steps {
		ids[cs.ID] = true
	}
	for _, name := range slices.Sorted(maps.Keys(p.Outputs)) {
		if cid, _, _ := strings.Cut(p.Outputs[name], "."); !ids[cid] {
			errs = append(errs, fmt.Errorf("step %q: pipeline.outputs.%s: pipeline %s has no step %q", st.ID, name, p.Ref(), cid))
		}
	}
	// The child's structure was checked with the whole spec's: only
	// what needs the agents is checked here, once per child.
	if _, _, cerrs := validate(*p.Spec, c.lookup, c.router, c.limits); len(cerrs) > 0 {
		errs = append(errs, fmt.Errorf("step %q: pipeline %s: %w %q: %w", st.ID, schemas.Clip(p.Ref(), 100), ErrInvalidPipeline, schemas.Clip(p.Spec.Name, 100), bounded(cerrs)))
	}
	return errs
}

// itemSeed is the seed value of a for_each step's child that each item is
// given as: for_each.input, else the child's one seed value.
func itemSeed(step pipelinespec.PipelineStep) (string, error) {
	vals := step.Pipeline.Spec.Seed.Values
	names := slices.Sorted(maps.Keys(vals))
	if name := step.ForEach.Input; name != "" {
		if _, ok := vals[name]; !ok {
			return "", badItems("for_each.input %q is not a seed value of pipeline %s (its seed values: %s)", name, step.Pipeline.Ref(), orNone(names))
		}
		return name, nil
	}
	if len(names) != 1 {
		return "", badItems("pipeline %s has %d seed values (%s): name the one the items go to with for_each.input", step.Pipeline.Ref(), len(names), orNone(names))
	}
	return names[0], nil
}
