package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// forEach runs its agent (or its pipeline, a child run per item) once
// per item of for_each.items, up to for_each.parallel at a time. The first
// item that fails fails the step (no more items start). Once every item
// ended, the items' outputs are merged output by output, in item order: by
// their data type's merge, TEXT (which has none) one item a line; an
// output of another type with no merge is left out, and the summary says
// so.
type forEach struct{}

// errBadItems marks a loop that cannot start for what its spec and its
// inputs hold (it fails), as against the store's trouble (tried again).
var errBadItems = errors.New("bad items")

func badItems(format string, args ...any) error {
	return &itemsError{fmt.Errorf(format, args...)}
}

// itemsError is an error of errBadItems that prints as its cause.
type itemsError struct{ err error }

func (e *itemsError) Error() string   { return e.err.Error() }
func (e *itemsError) Unwrap() []error { return []error{e.err, errBadItems} }

// varsPrefix starts a for_each.items naming a list variable.
const varsPrefix = "vars."

// itemInput is the input of c that for_each step's items are given as.
func itemInput(step pipelinespec.PipelineStep, c schemas.AgentContract) (schemas.TypedInput, error) {
	if name := step.ForEach.Input; name != "" {
		in, ok := c.Input(name)
		if !ok {
			return in, badItems("for_each.input %q is not an input of agent %s (its inputs: %s)", name, c.Name, inputNames(c))
		}
		return in, nil
	}
	var req []schemas.TypedInput
	for _, in := range c.Inputs {
		if in.Required {
			req = append(req, in)
		}
	}
	if len(req) != 1 {
		return schemas.TypedInput{}, badItems("agent %s has %d required inputs (%s): name the one the items go to with for_each.input", c.Name, len(req), inputNames(c))
	}
	return req[0], nil
}

func inputNames(c schemas.AgentContract) string {
	var names []string
	for _, in := range c.Inputs {
		names = append(names, in.Name)
	}
	return orNone(names)
}

// itemsView is spec with for_each step id's item input mapped to its
// items (a list variable maps to a TEXT literal standing in for it), so
// the items are checked and read as any mapped input is.
func itemsView(spec pipelinespec.PipelineSpec, id, input string) pipelinespec.PipelineSpec {
	spec.Steps = slices.Clone(spec.Steps)
	for i, s := range spec.Steps {
		if s.ID != id {
			continue
		}
		s.Inputs = maps.Clone(s.Inputs)
		if s.Inputs == nil {
			s.Inputs = map[string]string{}
		}
		src := s.ForEach.Items
		if strings.HasPrefix(src, varsPrefix) {
			src = SourceTextPrefix + "items"
		}
		s.Inputs[input] = src
		spec.Steps[i] = s
	}
	return spec
}

func (forEach) prepare(ctx context.Context, e env, st stepStart) (*state.LoopItems, *state.LoopProgress, error) {
	sd, id := st.sd, st.id
	step, _ := sd.Step(id)
	if step.Pipeline != nil {
		return pipelineItems(ctx, e, sd, step)
	}
	in, err := itemInput(step, sd.Contracts[step.Agent])
	if err != nil {
		return nil, nil, err
	}
	view := (&state.RunSpec{ID: sd.ID, Spec: itemsView(sd.Spec, id, in.Name), Contracts: sd.Contracts, Waves: sd.Waves, Nonce: sd.Nonce, Owner: sd.Owner}).Init()
	inputs, err := stepInputs(ctx, e.config().router, view, id,
		func(p string) (*state.StepState, error) { return e.record(ctx, sd.ID, p) },
		func() (map[string]schemas.TypedValue, error) { return e.store().RunSlots(ctx, sd.ID) })
	if err != nil {
		return nil, nil, err
	}
	coll := inputs[in.Name]
	delete(inputs, in.Name)
	var items *state.LoopItems
	if name, ok := strings.CutPrefix(step.ForEach.Items, varsPrefix); ok {
		items, err = listItems(sd.Spec.Vars[name], step.ForEach.Items)
	} else {
		items, err = splitItems(coll, step.ForEach.Items)
	}
	if err != nil {
		return nil, nil, err
	}
	if !route.Feeds(items.DataType, items.Hint, in) {
		return nil, nil, badItems("for_each.items %s holds %s items but input %q takes %s%s", step.ForEach.Items, items.DataType, in.Name, in.DataType, route.HintSuffix(in.ContentTypeHint))
	}
	if len(items.Values) > e.config().limits.ForEachItems {
		return nil, nil, badItems("%w", pipelinespec.ItemsOverLimit(id, step.ForEach.Items, len(items.Values), e.config().limits.ForEachItems))
	}
	items.Input, items.Base = in.Name, inputs
	return items, &state.LoopProgress{N: len(items.Values), Parallel: step.ForEach.Limit()}, nil
}

// pipelineItems are the items of a for_each that runs a pipeline per
// item: each is given as the child's seed value itemSeed names, which
// must be of the items' data type.
func pipelineItems(ctx context.Context, e env, sd *state.RunSpec, step pipelinespec.PipelineStep) (*state.LoopItems, *state.LoopProgress, error) {
	name, err := itemSeed(step)
	if err != nil {
		return nil, nil, err
	}
	src := step.ForEach.Items
	var items *state.LoopItems
	if v, ok := strings.CutPrefix(src, varsPrefix); ok {
		items, err = listItems(sd.Spec.Vars[v], src)
	} else {
		coll, found, serr := source(sd, src, func(p string) (*state.StepState, error) { return e.record(ctx, sd.ID, p) },
			func() (map[string]schemas.TypedValue, error) { return e.store().RunSlots(ctx, sd.ID) })
		switch {
		case serr != nil:
			return nil, nil, serr
		case !found:
			return nil, nil, badItems("%w: for_each.items %s holds nothing", route.ErrMissingInput, src)
		}
		items, err = splitItems(coll, src)
	}
	if err != nil {
		return nil, nil, err
	}
	if want := step.Pipeline.Spec.Seed.Values[name].DataType; want != items.DataType {
		return nil, nil, badItems("for_each.items %s holds %s items but seed value %s of pipeline %s is %s", src, items.DataType, name, step.Pipeline.Ref(), want)
	}
	if len(items.Values) > e.config().limits.ForEachItems {
		return nil, nil, badItems("%w", pipelinespec.ItemsOverLimit(step.ID, src, len(items.Values), e.config().limits.ForEachItems))
	}
	items.Input = name
	return items, &state.LoopProgress{N: len(items.Values), Parallel: step.ForEach.Limit()}, nil
}

// splitItems splits a collection into items: FILE_IDS one a file id, TEXT
// one a non-empty line.
func splitItems(tv schemas.TypedValue, src string) (*state.LoopItems, error) {
	out := &state.LoopItems{DataType: tv.DataType, Hint: tv.ContentTypeHint}
	switch tv.DataType {
	case schemas.TypeFileIDs:
		fc, err := tv.Files()
		if err != nil {
			return nil, badItems("for_each.items %s: %w", src, err)
		}
		if fc.Spilled() {
			return nil, badItems("for_each.items %s is a collection of %d file ids kept in the object store; a for_each takes at most %d ids held in place", src, fc.Count(), pipelinespec.MaxLoopItems)
		}
		for _, fid := range fc.IDs() {
			b, _ := json.Marshal(schemas.FromIDs(fc.ContentType(), fid))
			out.Values = append(out.Values, b)
		}
	case schemas.TypeText:
		text, err := tv.Text()
		if err != nil {
			return nil, badItems("for_each.items %s: %w", src, err)
		}
		out.Values = textItems(strings.Split(text, "\n"))
	default:
		return nil, badItems("for_each.items %s is %s, which cannot be split into items; give FILE_IDS (an item a file id), TEXT (an item a line) or a list variable", src, tv.DataType)
	}
	return out, nil
}

// listItems are the items of a list variable: one TEXT item an element
// (a string as it is, anything else as JSON); a string variable is split
// into lines.
func listItems(v any, src string) (*state.LoopItems, error) {
	var texts []string
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok {
				texts = append(texts, s)
				continue
			}
			b, err := json.Marshal(e)
			if err != nil {
				return nil, badItems("for_each.items %s: %w", src, err)
			}
			texts = append(texts, string(b))
		}
	case string:
		texts = strings.Split(v, "\n")
	default:
		return nil, badItems("for_each.items %s is a %T, not a list; give the variable a list value, e.g. --var 'items=[\"a\",\"b\"]'", src, v)
	}
	return &state.LoopItems{DataType: schemas.TypeText, Values: textItems(texts)}, nil
}

// textItems are the non-empty strings of texts as TEXT values.
func textItems(texts []string) []json.RawMessage {
	var out []json.RawMessage
	for _, t := range texts {
		if strings.TrimSpace(t) == "" {
			continue
		}
		b, _ := json.Marshal(t)
		out = append(out, b)
	}
	return out
}

func (forEach) inputs(_ context.Context, _ env, _ *state.RunSpec, _ string, items *state.LoopItems, i int) (map[string]schemas.TypedValue, error) {
	in := maps.Clone(items.Base)
	if in == nil {
		in = map[string]schemas.TypedValue{}
	}
	in[items.Input] = items.Item(i, "for_each")
	return in, nil
}

func (forEach) decide(_ context.Context, _ env, _ *state.RunSpec, _ string, p *state.LoopProgress, i int, rec *state.StepState) (string, string, error) {
	if rec.Status == schemas.StepCompleted {
		return "", "", nil
	}
	return fmt.Sprintf("item %d of %d (task %s) failed: %s", i+1, p.N, rec.TaskID, rec.Error), rec.Code, nil
}

func (forEach) finish(ctx context.Context, e env, sd *state.RunSpec, h *state.RunHeader, id string, p *state.LoopProgress) (*state.StepState, error) {
	step, _ := sd.Step(id)
	now := time.Now().UTC()
	if p.Code != "" {
		return failedRecord(sd, h, id, p.Code, p.Stop, now), nil
	}
	recs, err := itemRecords(ctx, e, sd.ID, id, p.N)
	if err != nil {
		return nil, err
	}
	rec := loopRecord(sd, h, id, recs, now)
	rec.Summary = fmt.Sprintf("%s, %d at a time", schemas.Plural(p.N, "item", "items"), p.Parallel)
	byName := map[string][]schemas.TypedValue{}
	for _, r := range recs {
		for name, v := range r.Outputs {
			byName[name] = append(byName[name], v)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		v, err := mergeItems(ctx, e, byName[name], id)
		if errors.Is(err, schemas.ErrNotMergeable) {
			rec.Summary += fmt.Sprintf("; output %s (%s) has no merge: left out", name, byName[name][0].DataType)
			continue
		}
		if err != nil {
			return failedRecord(sd, h, id, schemas.CodeAgentError, fmt.Sprintf("step %q (%s): merging output %s of the items: %v", id, step.Agent, name, err), now), nil
		}
		if rec.Outputs == nil {
			rec.Outputs = map[string]schemas.TypedValue{}
		}
		rec.Outputs[name] = v
	}
	return rec, nil
}

// mergeItems merges the values of one output of the items, in item order.
func mergeItems(ctx context.Context, e env, vals []schemas.TypedValue, source string) (schemas.TypedValue, error) {
	dt := vals[0].DataType
	switch {
	case e.config().router.DataTypes().Mergeable(dt):
		m := vals[0]
		for _, v := range vals[1:] {
			var err error
			if m, err = e.config().router.Merge(ctx, m, v, source); err != nil {
				return m, err
			}
		}
		return m, nil
	case dt == schemas.TypeText:
		lines := make([]string, 0, len(vals))
		for _, v := range vals {
			t, err := v.Text()
			if err != nil {
				return v, err
			}
			lines = append(lines, t)
		}
		return schemas.TextValue(strings.Join(lines, "\n"), source), nil
	}
	return schemas.TypedValue{}, fmt.Errorf("%w: %s", schemas.ErrNotMergeable, dt)
}

// itemRecords reads the records of items [0, n) of a loop step, a few at
// a time.
func itemRecords(ctx context.Context, e env, run, id string, n int) ([]*state.StepState, error) {
	out := make([]*state.StepState, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(16, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = e.store().ItemRecord(ctx, run, id, i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return out, errors.Join(errs...)
}

// loopRecord is the completed record of a loop step whose items recs
// ended, their usage summed.
func loopRecord(sd *state.RunSpec, h *state.RunHeader, id string, recs []*state.StepState, now time.Time) *state.StepState {
	step, _ := sd.Step(id)
	rec := &state.StepState{ID: id, Agent: step.Agent, Wave: waveOf(sd, id), Status: schemas.StepCompleted, Attempt: 1,
		TaskID: pipelinespec.StepTaskID(sd.ID, id, 1, sd.Nonce), DispatchedAt: h.WaveStartedAt, Deadline: h.WaveStartedAt.Add(sd.Timeout(id)), FinishedAt: now}
	for _, r := range recs {
		rec.Metrics.Tokens = rec.Metrics.Tokens.Add(r.Metrics.Tokens)
		rec.Metrics.Cost += r.Metrics.Cost
		rec.Metrics.ModelMS += r.Metrics.ModelMS
	}
	rec.Metrics.DurationMS = now.Sub(h.WaveStartedAt).Milliseconds()
	return rec
}
