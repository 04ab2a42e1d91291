package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// cancelStepRuns cancels the child runs step id of sd has running: the
// child of a step of kind pipeline, the running items' children of a
// for_each that runs a pipeline per item. why says why (the parent's
// step ended so); depth bounds how many levels of children are cancelled.
func (s *Scheduler) cancelStepRuns(ctx context.Context, sd *state.RunSpec, id, why string, depth int) {
	step, _ := sd.Step(id)
	k, err := kindOf(step)
	if err != nil {
		return
	}
	reason := fmt.Sprintf("%s: the parent run %s no longer waits for it: its step %q %s", schemas.CodeCancelled, sd.ID, id, why)
	for _, child := range k.children(ctx, s, sd, id) {
		if err := s.cancelRun(ctx, child, reason, depth-1); err != nil {
			s.log.WarnContext(runContext(sd), "cancelling a child run", "step", id, "child", child, "err", err)
		}
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
		s.stopTasks(ctx, sd, sid)
		if depth > 0 {
			s.cancelStepRuns(ctx, sd, sid, "was cancelled", depth)
		}
	}
	if len(recs) == 0 {
		return nil
	}
	return s.settle(ctx, sd, recs)
}

// stopTasks asks the agent of step id of sd to stop its running tasks: the
// step's task, or a loop's running items. Nothing answers; an instance not
// running the task ignores the request.
func (s *Scheduler) stopTasks(ctx context.Context, sd *state.RunSpec, id string) {
	step, _ := sd.Step(id)
	k, err := kindOf(step)
	if step.Agent == "" || err != nil {
		return
	}
	subj, err := s.names.Control(step.Agent)
	if err != nil {
		return
	}
	for _, t := range k.tasks(ctx, s, sd, id) {
		body, _ := json.Marshal(map[string]string{"taskid": t})
		if err := s.nc.Publish(subj, body); err != nil {
			s.log.WarnContext(runContext(sd), "asking a task to stop", "task", t, "err", err)
		}
	}
}
