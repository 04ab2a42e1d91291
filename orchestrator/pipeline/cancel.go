package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// A child run outlives nothing it runs for: when its step ends without it
// (the step timed out), the child is cancelled as a run is (see the
// gateway's POST /api/runs/{id}/cancel): the agent of each of its running
// steps is asked to stop the task on mesh.control.<agent>, and each of its
// running steps fails with code cancelled and a reason naming the parent,
// so the child fails and its later steps are skipped. A child of the child
// is cancelled the same way.

// cancelStep cancels what step id of sd started (its kind's cancel, see
// stepCancel).
func (s *Scheduler) cancelStep(ctx context.Context, sd *state.RunSpec, id string, c stepCancel) {
	step, _ := sd.Step(id)
	if k, err := kindOf(step); err == nil {
		k.cancel(ctx, schedEnv{s}, sd, id, c)
	}
}

// cancelRun cancels run id, if it is running: its running steps' tasks
// are asked to stop, their children cancelled (depth more levels down),
// and the steps fail with reason and code cancelled.
func (s *Scheduler) cancelRun(ctx context.Context, id, reason string, depth int) error {
	h, err := s.loadHeader(ctx, id, true)
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil || h.Done() {
		return err
	}
	sd, err := s.loadSpec(ctx, id)
	if err != nil {
		return err
	}
	if h.Wave < 0 || h.Wave >= len(sd.Waves) {
		return nil
	}
	now := time.Now().UTC()
	var recs []*state.StepState
	for _, sid := range sd.Waves[h.Wave] {
		if !h.Running(sd, sid) {
			continue
		}
		if rec, err := s.loadRecord(ctx, id, sid); err == nil {
			recs = append(recs, rec) // ended, maybe not settled
			continue
		}
		// The record first: the agent's answer to the stop request then
		// finds the step ended, and the reason stands.
		rec, err := s.store.RecordStep(ctx, id, failedRecord(sd, h, sid, schemas.CodeCancelled, reason, now))
		if err != nil {
			return err
		}
		s.cache.putRecord(id, rec)
		recs = append(recs, rec)
		s.cancelStep(ctx, sd, sid, stepCancel{why: "was cancelled", depth: depth, tasks: true})
	}
	if len(recs) == 0 {
		return nil
	}
	return s.settle(ctx, sd, recs, nil)
}
