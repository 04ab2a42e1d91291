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

// The run scheduler. These functions are pure: they mutate a RunState
// inside a compare-and-set update and record what must happen once the
// update is saved (tasks to publish, events to emit), so whichever replica
// wins the update does the follow-up, exactly once per transition.

// runChanges collects the follow-up of one run update.
type runChanges struct {
	dispatch []string // steps newly marked running: publish their tasks
	events   []StepEvent
	finished bool // the run ended in this update
}

// stepTimeout is the time budget of a step: its own, else its agent's, else
// DefaultTaskTimeout.
func (r *RunState) stepTimeout(stepID string) time.Duration {
	for _, s := range r.Spec.Steps {
		if s.ID == stepID {
			if s.TimeoutMS > 0 {
				return time.Duration(s.TimeoutMS) * time.Millisecond
			}
			if c, ok := r.Contracts[s.Agent]; ok && c.TimeoutMS > 0 {
				return time.Duration(c.TimeoutMS) * time.Millisecond
			}
		}
	}
	return DefaultTaskTimeout
}

func (r *RunState) specStep(id string) (schemas.PipelineStep, bool) {
	for _, s := range r.Spec.Steps {
		if s.ID == id {
			return s, true
		}
	}
	return schemas.PipelineStep{}, false
}

// advance starts the pending steps of the wave in progress, moves to the
// next wave when every step of this one has ended, and ends the run after
// the last wave. A step whose dependency did not complete is skipped with
// the reason.
func (r *RunState) advance(now time.Time, ch *runChanges) {
	for r.Status == RunRunning {
		if r.Wave >= len(r.Waves) {
			r.finish(now, ch)
			return
		}
		busy := false
		for _, id := range r.Waves[r.Wave] {
			st := r.Steps[id]
			if st.Status == StepPending {
				if reason := r.blocked(id); reason != "" {
					st.Status, st.Reason, st.FinishedAt = StepSkipped, reason, now
					ch.events = append(ch.events, r.stepEvent(st, now))
					continue
				}
				st.Status = StepRunning
				st.Attempt++
				st.TaskID = TaskID(r.ID, id, st.Attempt)
				st.DispatchedAt = now
				st.Deadline = now.Add(r.stepTimeout(id))
				st.Republished = false
				ch.dispatch = append(ch.dispatch, id)
			}
			if st.Status == StepRunning {
				busy = true
			}
		}
		if busy {
			return
		}
		r.Wave++
	}
}

// blocked returns why step id cannot run ("" when every dependency
// completed).
func (r *RunState) blocked(id string) string {
	s, _ := r.specStep(id)
	for _, d := range s.DependsOn {
		dep := r.Steps[d]
		switch {
		case dep == nil:
			return fmt.Sprintf("dependency %q does not exist", d)
		case dep.Status == StepFailed:
			return fmt.Sprintf("dependency %q failed: %s", d, dep.Error)
		case dep.Status == StepSkipped:
			return fmt.Sprintf("dependency %q was skipped", d)
		case dep.Status != StepCompleted:
			return fmt.Sprintf("dependency %q has not completed", d)
		}
	}
	return ""
}

func (r *RunState) finish(now time.Time, ch *runChanges) {
	var failed []string
	for _, s := range r.Spec.Steps {
		st := r.Steps[s.ID]
		switch st.Status {
		case StepFailed:
			failed = append(failed, fmt.Sprintf("step %q (%s) failed: %s", st.ID, st.Agent, st.Error))
		case StepSkipped:
			failed = append(failed, fmt.Sprintf("step %q (%s) skipped: %s", st.ID, st.Agent, st.Reason))
		}
	}
	r.Status = RunCompleted
	if len(failed) > 0 {
		r.Status = RunFailed
		r.Error = strings.Join(failed, "; ")
	}
	r.FinishedAt = now
	ch.finished = true
}

// applyResult records the result of a step's task and advances the run.
// A result for a task already applied, for another attempt, or for a step
// that is no longer running (it timed out) changes nothing: it returns
// false.
func (r *RunState) applyResult(ctx context.Context, router *Router, stepID, taskID string, res schemas.AgentResult, now time.Time, ch *runChanges) (bool, error) {
	st := r.Steps[stepID]
	if st == nil || st.Status != StepRunning || st.TaskID != taskID || r.State.Applied(taskID) {
		return false, nil
	}
	contract := r.Contracts[st.Agent]
	if _, err := router.Apply(ctx, r.State, contract, taskID, res); err != nil {
		return false, err
	}
	st.FinishedAt = now
	st.Summary = res.Summary
	st.Metrics = res.Metrics
	if res.Success {
		st.Status = StepCompleted
		st.Outputs = make(map[string]schemas.TypedValue, len(res.Outputs))
		for name, tv := range res.Outputs {
			if tv.Source == "" {
				tv.Source = st.Agent
			}
			if tv.ContentTypeHint == "" {
				if o, ok := contract.Output(name); ok {
					tv.ContentTypeHint = o.ContentTypeHint
				}
			}
			st.Outputs[name] = tv
		}
	} else {
		st.Status = StepFailed
		st.Error = res.Err().Error()
	}
	ch.events = append(ch.events, r.stepEvent(st, now))
	r.advance(now, ch)
	return true, nil
}

// failStep marks a running step (of the given task) failed with msg and
// advances the run. It reports false when the step is not running that task.
func (r *RunState) failStep(stepID, taskID, msg string, now time.Time, ch *runChanges) bool {
	st := r.Steps[stepID]
	if st == nil || st.Status != StepRunning || st.TaskID != taskID {
		return false
	}
	st.Status, st.Error, st.FinishedAt = StepFailed, msg, now
	ch.events = append(ch.events, r.stepEvent(st, now))
	r.advance(now, ch)
	return true
}

// timeOut fails every running step whose deadline passed more than grace
// ago.
func (r *RunState) timeOut(now time.Time, grace time.Duration, ch *runChanges) bool {
	changed := false
	for _, id := range r.runningSteps() {
		st := r.Steps[id]
		if now.After(st.Deadline.Add(grace)) {
			msg := fmt.Sprintf("%s: no result by the deadline %s (timeout %s)", schemas.CodeTimeout,
				st.Deadline.UTC().Format(time.RFC3339), r.stepTimeout(id))
			changed = r.failStep(id, st.TaskID, msg, now, ch) || changed
		}
	}
	return changed
}

func (r *RunState) runningSteps() []string {
	var out []string
	for _, s := range r.Spec.Steps {
		if st := r.Steps[s.ID]; st != nil && st.Status == StepRunning {
			out = append(out, s.ID)
		}
	}
	return out
}

// newRun builds the state of a validated (or rejected, when verr is not
// nil) pipeline; a valid run starts its first wave.
func newRun(id string, spec schemas.PipelineSpec, contracts map[string]schemas.AgentContract, waves [][]string, router *Router, verr error, now time.Time, ch *runChanges) *RunState {
	r := &RunState{ID: id, Name: spec.Name, Status: RunRunning, Spec: spec, Contracts: contracts, Waves: waves,
		Steps: map[string]*StepState{}, State: schemas.NewConversationState(id), CreatedAt: now, UpdatedAt: now}
	maps.Copy(r.State.Slots, seedSlots(spec.Seed, router))
	for w, wave := range waves {
		for _, sid := range wave {
			s, _ := r.specStep(sid)
			r.Steps[sid] = &StepState{ID: sid, Agent: s.Agent, Wave: w, Status: StepPending}
		}
	}
	if verr != nil {
		r.Status, r.Error, r.FinishedAt = RunFailed, verr.Error(), now
		ch.finished = true
		return r
	}
	r.advance(now, ch)
	return r
}

// stepInputs builds the task inputs of a step from the run: an input mapped
// in the spec reads its source; an unmapped one reads what its parents
// produced for it (merged when several parallel parents produced a
// mergeable type), else the run's slots.
func (r *RunState) stepInputs(ctx context.Context, router *Router, stepID string) (map[string]schemas.TypedValue, error) {
	s, _ := r.specStep(stepID)
	c := r.Contracts[s.Agent]
	builder := NewInputBuilder(router)
	reg := router.DataTypes()
	out := map[string]schemas.TypedValue{}
	var errs []error
	for _, in := range c.Inputs {
		if src, ok := s.Inputs[in.Name]; ok {
			v, found := r.source(src)
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
			ps := r.Steps[p]
			if ps == nil {
				continue
			}
			pc := r.Contracts[ps.Agent]
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
			if v, _, ok := builder.Lookup(in, r.State.Slots); ok {
				out[in.Name] = v
			} else if in.Required {
				errs = append(errs, fmt.Errorf("%w: input %q (%s%s): no parent produced it and no slot holds it", ErrMissingInput, in.Name, in.DataType, hintSuffix(in.ContentTypeHint)))
			}
		}
	}
	return out, errors.Join(errs...)
}

// source reads an input source of the spec: seed.*, <step>.<output> or
// state.<slot>.
func (r *RunState) source(src string) (schemas.TypedValue, bool) {
	if kind, ids, ok := seedSource(r.Spec.Seed, src); ok {
		if len(ids) == 0 {
			return schemas.TypedValue{}, false
		}
		return schemas.FilesValue(schemas.FromIDs(kind, ids...), "seed"), true
	}
	head, tail, _ := strings.Cut(src, ".")
	if head == "state" {
		v, ok := r.State.Slots[tail]
		return v, ok
	}
	if st := r.Steps[head]; st != nil {
		v, ok := st.Outputs[tail]
		return v, ok
	}
	return schemas.TypedValue{}, false
}
