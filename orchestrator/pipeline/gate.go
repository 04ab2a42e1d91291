package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// The gate: before a step starts, a router among its dependencies that
// chose another branch, or its condition (when) being false, skips it with
// the reason; its dependants are then skipped as the scheduler skips the
// dependants of any skipped step.

// errNotAhead is a step that is not started ahead of its wave's header
// (see dispatchAhead): its gate reads records that may not be written yet,
// or it ends at once with a record, which only follow settles.
var errNotAhead = errors.New("step is not started ahead of its wave")

// gated reports whether step's start may end it at once: it has a
// condition, is a branch of a router, or is not of kind agent.
func gated(sd *state.RunSpec, step pipelinespec.PipelineStep) bool {
	if step.When != "" || (step.Kind != "" && step.Kind != KindAgent) {
		return true
	}
	_, ok := routerOf(sd, step)
	return ok
}

// gate returns the record of a step that ends before it starts: skipped by
// its router or its condition, or failed when the condition cannot be
// evaluated. nil, nil lets the step start.
func (s *Scheduler) gate(ctx context.Context, st stepStart, step pipelinespec.PipelineStep) (*state.StepState, error) {
	if rec, err := offBranch(ctx, schedEnv{s}, st, step); rec != nil || err != nil {
		return rec, err
	}
	if step.When == "" {
		return nil, nil
	}
	ok, err := s.holds(ctx, st.sd, st.id, step.When, nil)
	if errors.Is(err, ErrBadCondition) {
		return failedRecord(st.sd, st.h, st.id, schemas.CodeInvalidInput, fmt.Sprintf("when: %v", err), time.Now().UTC()), nil
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return skippedRecord(st.sd, st.h, st.id, fmt.Sprintf("condition %q is false", step.When), time.Now().UTC()), nil
	}
	return nil, nil
}

// holds evaluates src, a condition of step id (its when or one of its
// rules), against the run's vars, slots and id's ancestors' records, and
// the names of extra.
func (s *Scheduler) holds(ctx context.Context, sd *state.RunSpec, id, src string, extra map[string]any) (bool, error) {
	anc := ancestors(sd.Spec, id)
	read, env, err := compileConditionWith(src, sd.Spec.Vars, anc, extra)
	if err != nil {
		return false, err
	}
	for _, a := range read {
		rec, err := s.loadRecord(ctx, sd.ID, a)
		if err != nil {
			return false, err
		}
		env.setStep(slices.Index(anc, a), rec)
	}
	if strings.Contains(src, "slots") {
		slots, err := s.store.RunSlots(ctx, sd.ID)
		if err != nil {
			return false, err
		}
		for name, tv := range slots {
			env.slots[name] = jsonValue(tv)
		}
	}
	return evalCondition(src, env)
}

// skippedRecord is the record of a step its gate skipped.
func skippedRecord(sd *state.RunSpec, h *state.RunHeader, stepID, reason string, now time.Time) *state.StepState {
	s, _ := sd.Step(stepID)
	return &state.StepState{ID: stepID, Agent: s.Agent, Wave: waveOf(sd, stepID), Status: schemas.StepSkipped,
		DispatchedAt: h.WaveStartedAt, FinishedAt: now, Reason: reason}
}
