package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/schemas"
)

// Waves groups the steps of spec into topological levels: wave 0 holds the
// steps without parents, wave n the steps whose deepest parent is in wave
// n-1. Steps keep their spec order inside a wave. A cycle is an error
// wrapping ErrCycle that names the cycle ("a -> b -> a"). References to
// unknown steps are ignored here (spec.Validate reports them).
func Waves(spec schemas.PipelineSpec) ([][]string, error) {
	index := make(map[string]int, len(spec.Steps))
	for i, s := range spec.Steps {
		if _, dup := index[s.ID]; !dup {
			index[s.ID] = i
		}
	}
	if cyc := findCycle(spec, index); cyc != nil {
		return nil, fmt.Errorf("%w: %s; remove one of these depends_on edges", ErrCycle, strings.Join(cyc, " -> "))
	}
	level := make(map[string]int, len(spec.Steps))
	var depth func(id string) int
	depth = func(id string) int {
		if l, ok := level[id]; ok {
			return l
		}
		l := 0
		for _, d := range spec.Steps[index[id]].DependsOn {
			if _, ok := index[d]; ok && d != id {
				l = max(l, depth(d)+1)
			}
		}
		level[id] = l
		return l
	}
	var waves [][]string
	seen := map[string]bool{}
	for _, s := range spec.Steps {
		if seen[s.ID] {
			continue
		}
		seen[s.ID] = true
		l := depth(s.ID)
		for len(waves) <= l {
			waves = append(waves, nil)
		}
		waves[l] = append(waves[l], s.ID)
	}
	return waves, nil
}

// findCycle returns the first cycle found as a path that starts and ends at
// the same step, or nil.
func findCycle(spec schemas.PipelineSpec, index map[string]int) []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var visit func(id string) []string
	visit = func(id string) []string {
		color[id] = grey
		stack = append(stack, id)
		for _, d := range spec.Steps[index[id]].DependsOn {
			if _, ok := index[d]; !ok || d == id { // self-dependency is reported by Validate
				continue
			}
			switch color[d] {
			case grey:
				// The stack runs d, x1, ..., id, each depending on the next,
				// and id depends on d: in execution order (parent -> child)
				// the cycle is d -> id -> ... -> x1 -> d.
				path := []string{d}
				for i := len(stack) - 1; i >= 0 && stack[i] != d; i-- {
					path = append(path, stack[i])
				}
				return append(path, d)
			case white:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
		return nil
	}
	for _, s := range spec.Steps {
		if color[s.ID] == white {
			if c := visit(s.ID); c != nil {
				return c
			}
		}
	}
	return nil
}

// The run scheduler. These functions are pure: they mutate a run header
// inside a compare-and-set update and record what must happen once the
// update is saved (tasks to publish, events to emit), so whichever replica
// wins the update does the follow-up, exactly once per transition.

// runChanges collects the follow-up of one run update.
type runChanges struct {
	dispatch []string // steps of a wave that just started: publish their tasks
	events   []StepEvent
	finished bool // the run ended in this update
}

// newHeader returns the header of a new run: validated (verr nil), it
// starts its first wave; rejected, it has ended.
func newHeader(sd *runSpec, name string, verr error, now time.Time, ch *runChanges) *runHeader {
	h := &runHeader{ID: sd.ID, Name: name, Status: RunRunning, Wave: -1, Steps: len(sd.Spec.Steps), CreatedAt: now, UpdatedAt: now}
	if verr != nil {
		h.Status, h.Error, h.FinishedAt = RunFailed, verr.Error(), now
		ch.finished = true
		return h
	}
	h.advance(sd, now, ch)
	return h
}

// advance moves to the next wave once every step of the wave in progress
// has ended: the steps of the new wave whose dependencies did not all
// complete are skipped with the reason, the others are to be dispatched.
// After the last wave the run ends.
func (h *runHeader) advance(sd *runSpec, now time.Time, ch *runChanges) {
	for h.Status == RunRunning {
		if h.Wave >= 0 && h.Wave < len(sd.Waves) && len(h.WaveEnded) < len(sd.Waves[h.Wave]) {
			return // busy
		}
		h.Wave++
		h.WaveEnded, h.Republished = nil, false
		if h.Wave >= len(sd.Waves) {
			h.finish(sd, now, ch)
			return
		}
		h.WaveStartedAt = now
		for _, id := range sd.Waves[h.Wave] {
			if reason := h.blocked(sd, id); reason != "" {
				if h.Skipped == nil {
					h.Skipped = map[string]string{}
				}
				h.Skipped[id] = reason
				h.WaveEnded = append(h.WaveEnded, id)
				s, _ := sd.step(id)
				ch.events = append(ch.events, StepEvent{RunID: h.ID, Step: id, Agent: s.Agent, Status: StepSkipped,
					Wave: h.Wave, Reason: reason, At: now})
				continue
			}
			ch.dispatch = append(ch.dispatch, id)
		}
	}
}

// blocked returns why step id cannot run ("" when every dependency
// completed). Dependencies are in earlier waves, which have ended.
func (h *runHeader) blocked(sd *runSpec, id string) string {
	s, _ := sd.step(id)
	for _, d := range s.DependsOn {
		if _, ok := sd.index[d]; !ok {
			return fmt.Sprintf("dependency %q does not exist", d)
		}
		if msg, failed := h.Failed[d]; failed {
			return fmt.Sprintf("dependency %q failed: %s", d, msg)
		}
		if _, skipped := h.Skipped[d]; skipped {
			return fmt.Sprintf("dependency %q was skipped", d)
		}
	}
	return ""
}

func (h *runHeader) finish(sd *runSpec, now time.Time, ch *runChanges) {
	var failed []string
	for _, s := range sd.Spec.Steps {
		if msg, ok := h.Failed[s.ID]; ok {
			failed = append(failed, fmt.Sprintf("step %q (%s) failed: %s", s.ID, s.Agent, msg))
		} else if reason, ok := h.Skipped[s.ID]; ok {
			failed = append(failed, fmt.Sprintf("step %q (%s) skipped: %s", s.ID, s.Agent, reason))
		}
	}
	h.Status = RunCompleted
	if len(failed) > 0 {
		h.Status = RunFailed
		h.Error = strings.Join(failed, "; ")
	}
	h.FinishedAt = now
	ch.finished = true
}

// end records that a step of the wave in progress ended as rec says and
// advances the run. It reports false when the header already knows, or
// the step is not running (a duplicate or late record).
func (h *runHeader) end(sd *runSpec, rec *StepState, now time.Time, ch *runChanges) bool {
	if !h.running(sd, rec.ID) {
		return false
	}
	h.WaveEnded = append(h.WaveEnded, rec.ID)
	if rec.Status == StepCompleted {
		h.Completed++
	} else {
		if h.Failed == nil {
			h.Failed = map[string]string{}
		}
		h.Failed[rec.ID] = rec.Error
	}
	ch.events = append(ch.events, stepEvent(h.ID, rec, now))
	h.advance(sd, now, ch)
	return true
}

// resultRecord is the record of a step ended by its agent's result.
func resultRecord(sd *runSpec, h *runHeader, stepID, taskID string, res schemas.AgentResult, now time.Time) *StepState {
	s, _ := sd.step(stepID)
	rec := &StepState{ID: stepID, Agent: s.Agent, Wave: sd.waveOf[stepID], Attempt: 1, TaskID: taskID,
		DispatchedAt: h.WaveStartedAt, Deadline: h.WaveStartedAt.Add(sd.timeout(stepID)), FinishedAt: now,
		Summary: res.Summary, Metrics: res.Metrics}
	if !res.Success {
		rec.Status, rec.Error = StepFailed, res.Err().Error()
		return rec
	}
	rec.Status = StepCompleted
	contract := sd.Contracts[s.Agent]
	for name, tv := range res.Outputs {
		if rec.Outputs == nil {
			rec.Outputs = make(map[string]schemas.TypedValue, len(res.Outputs))
		}
		if tv.Source == "" {
			tv.Source = s.Agent
		}
		if tv.ContentTypeHint == "" {
			if o, ok := contract.Output(name); ok {
				tv.ContentTypeHint = o.ContentTypeHint
			}
		}
		if tv.ProducedAt.IsZero() {
			tv.ProducedAt = now
		}
		rec.Outputs[name] = tv
	}
	return rec
}

// failedRecord is the record of a running step that failed without a
// result (timeout, inputs that could not be built).
func failedRecord(sd *runSpec, h *runHeader, stepID, msg string, now time.Time) *StepState {
	s, _ := sd.step(stepID)
	return &StepState{ID: stepID, Agent: s.Agent, Wave: sd.waveOf[stepID], Status: StepFailed, Attempt: 1,
		TaskID: TaskID(h.ID, stepID, 1), DispatchedAt: h.WaveStartedAt, Deadline: h.WaveStartedAt.Add(sd.timeout(stepID)),
		FinishedAt: now, Error: msg}
}

// stepInputs builds the task inputs of a step: an input mapped in the spec
// reads its source; an unmapped one reads what its parents produced for it
// (merged when several parallel parents produced a mergeable type), else
// the run's slots. parent returns a parent's record; slots the run's slots
// (read only when an input needs them).
func stepInputs(ctx context.Context, router *Router, sd *runSpec, stepID string,
	parent func(id string) (*StepState, error), slots func() (map[string]schemas.TypedValue, error)) (map[string]schemas.TypedValue, error) {
	s, _ := sd.step(stepID)
	c := sd.Contracts[s.Agent]
	builder := NewInputBuilder(router)
	reg := router.DataTypes()
	out := map[string]schemas.TypedValue{}
	var errs []error
	for _, in := range c.Inputs {
		if src, ok := s.Inputs[in.Name]; ok {
			v, found, err := source(sd, src, parent, slots)
			if err != nil {
				return nil, err
			}
			if found {
				out[in.Name] = v
			} else if in.Required {
				errs = append(errs, fmt.Errorf("%w: input %q maps to %s, which holds nothing", ErrMissingInput, in.Name, src))
			}
			continue
		}
		var (
			vals      []schemas.TypedValue
			mergeable = reg.Mergeable(in.DataType)
		)
		for _, p := range s.DependsOn {
			ps, err := parent(p)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			pc := sd.Contracts[ps.Agent]
			for _, name := range slices.Sorted(maps.Keys(ps.Outputs)) {
				v := ps.Outputs[name]
				if feeds(v.DataType, v.ContentTypeHint, in) {
					vals = append(vals, v)
					if o, ok := pc.Output(name); !ok || !o.Mergeable {
						mergeable = false
					}
				}
			}
		}
		switch {
		case len(vals) == 1 || (len(vals) > 1 && !mergeable):
			out[in.Name] = vals[len(vals)-1]
		case len(vals) > 1:
			m := vals[0]
			for _, v := range vals[1:] {
				var err error
				if m, err = router.Merge(ctx, m, v, "merge"); err != nil {
					return nil, fmt.Errorf("merging the parents' %s for input %q: %w", in.DataType, in.Name, err)
				}
			}
			out[in.Name] = m
		default:
			sl, err := slots()
			if err != nil {
				return nil, err
			}
			if v, _, ok := builder.Lookup(in, sl); ok {
				out[in.Name] = v
			} else if in.Required {
				errs = append(errs, fmt.Errorf("%w: input %q (%s%s): no parent produced it and no slot holds it", ErrMissingInput, in.Name, in.DataType, hintSuffix(in.ContentTypeHint)))
			}
		}
	}
	return out, errors.Join(errs...)
}

// source reads an input source of the spec: seed.*, <step>.<output>,
// state.<slot> or text:<literal>.
func source(sd *runSpec, src string, parent func(string) (*StepState, error), slots func() (map[string]schemas.TypedValue, error)) (schemas.TypedValue, bool, error) {
	if text, ok := textLiteral(src); ok {
		return schemas.TextValue(text, "pipeline"), true, nil
	}
	if kind, ids, ok := seedSource(sd.Spec.Seed, src); ok {
		if len(ids) == 0 {
			return schemas.TypedValue{}, false, nil
		}
		return schemas.FilesValue(schemas.FromIDs(kind, ids...), "seed"), true, nil
	}
	head, tail, _ := strings.Cut(src, ".")
	if head == "state" {
		sl, err := slots()
		if err != nil {
			return schemas.TypedValue{}, false, err
		}
		v, ok := sl[tail]
		return v, ok, nil
	}
	if _, ok := sd.index[head]; !ok {
		return schemas.TypedValue{}, false, nil
	}
	st, err := parent(head)
	if errors.Is(err, ErrNotFound) {
		return schemas.TypedValue{}, false, nil
	}
	if err != nil {
		return schemas.TypedValue{}, false, err
	}
	v, ok := st.Outputs[tail]
	return v, ok, nil
}
