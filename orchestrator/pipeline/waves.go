package pipeline

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// The run scheduler. These functions are pure: they mutate a run header
// inside a compare-and-set update and record what must happen once the
// update is saved (tasks to publish, events to emit), so whichever replica
// wins the update does the follow-up, exactly once per transition.

// runChanges collects the follow-up of one run update.
type runChanges struct {
	dispatch []string // steps of a wave that just started: publish their tasks
	events   []schemas.StepEvent
	finished bool // the run ended in this update
}

// newHeader returns the header of a new run: validated (verr nil), it
// starts its first wave; rejected, it has ended.
func newHeader(sd *state.RunSpec, name string, verr error, now time.Time, ch *runChanges) *state.RunHeader {
	h := &state.RunHeader{ID: sd.ID, Name: name, Status: schemas.RunRunning, Wave: -1, CreatedAt: now, UpdatedAt: now}
	if verr != nil {
		h.Status, h.Error, h.Code, h.FinishedAt = schemas.RunFailed, verr.Error(), failureCode(verr), now
		ch.finished = true
		return h
	}
	advance(h, sd, now, ch)
	return h
}

// advance moves to the next wave once every step of the wave in progress
// has ended: the steps of the new wave whose dependencies did not all
// complete are skipped with the reason, the others are to be dispatched.
// After the last wave the run ends.
func advance(h *state.RunHeader, sd *state.RunSpec, now time.Time, ch *runChanges) {
	for h.Status == schemas.RunRunning {
		if h.Wave >= 0 && h.Wave < len(sd.Waves) && len(h.WaveEnded) < len(sd.Waves[h.Wave]) {
			return // busy
		}
		h.Wave++
		h.WaveEnded, h.Republished, h.Approved = nil, false, nil
		if h.Wave >= len(sd.Waves) {
			finish(h, sd, now, ch)
			return
		}
		h.WaveStartedAt = now
		for _, id := range sd.Waves[h.Wave] {
			if reason := blocked(h, sd, id); reason != "" {
				if h.Skipped == nil {
					h.Skipped = map[string]string{}
				}
				h.Skipped[id] = reason
				h.WaveEnded = append(h.WaveEnded, id)
				s, _ := sd.Step(id)
				ch.events = append(ch.events, schemas.StepEvent{RunID: h.ID, Step: id, Agent: s.Agent, Status: schemas.StepSkipped,
					Wave: h.Wave, Reason: reason, At: now})
				continue
			}
			ch.dispatch = append(ch.dispatch, id)
			markWaiting(h, sd, id)
		}
	}
}

// blocked returns why step id cannot run ("" when it can).
// Dependencies are in earlier waves, which have ended. A step runs when
// every dependency completed, or when some did and the others are off the
// path a router chose (a branch it did not choose, or a step after one):
// that is how steps after several branches of a router join.
func blocked(h *state.RunHeader, sd *state.RunSpec, id string) string {
	s, _ := sd.Step(id)
	var off string // a dependency off the chosen path
	completed := false
	for _, d := range s.DependsOn {
		if !sd.Has(d) {
			return fmt.Sprintf("dependency %q does not exist", d)
		}
		if msg, failed := h.Failed[d]; failed {
			return fmt.Sprintf("dependency %q failed: %s", d, msg)
		}
		reason, skipped := h.Skipped[d]
		switch {
		case !skipped:
			completed = true
		case offPath(reason):
			if off == "" {
				off = d
			}
		default:
			return fmt.Sprintf("dependency %q was skipped", d)
		}
	}
	if off != "" && !completed {
		return fmt.Sprintf("dependency %q was skipped%s", off, notTaken)
	}
	return ""
}

// notTaken ends the skip reason of a step after a branch its router did
// not choose.
const notTaken = " (its branch was not taken)"

// offPath reports whether a skip reason says the step is off the path a
// router chose: a branch it did not choose, or a step after one.
func offPath(reason string) bool {
	return strings.HasPrefix(reason, routerSkipPrefix) || strings.HasSuffix(reason, notTaken)
}

func finish(h *state.RunHeader, sd *state.RunSpec, now time.Time, ch *runChanges) {
	var failed []string
	for _, s := range sd.Spec.Steps {
		if msg, ok := h.Failed[s.ID]; ok {
			failed = append(failed, fmt.Sprintf("step %q (%s) failed: %s", s.ID, s.Agent, msg))
		} else if reason, ok := h.Skipped[s.ID]; ok {
			failed = append(failed, fmt.Sprintf("step %q (%s) skipped: %s", s.ID, s.Agent, reason))
		}
	}
	h.Status = schemas.RunCompleted
	// Skips alone (conditions, routers) do not fail the run; a step that
	// failed does, and the steps skipped because of it are told too.
	if len(h.Failed) > 0 {
		h.Status = schemas.RunFailed
		h.Error, h.Code = strings.Join(failed, "; "), schemas.CodeStepFailed
	}
	h.FinishedAt = now
	ch.finished = true
}

// end records that a step of the wave in progress ended as rec says and
// advances the run. It reports false when the header already knows, or
// the step is not running (a duplicate or late record).
func end(h *state.RunHeader, sd *state.RunSpec, rec *state.StepState, now time.Time, ch *runChanges) bool {
	if !h.Running(sd, rec.ID) {
		return false
	}
	h.WaveEnded = append(h.WaveEnded, rec.ID)
	unmarkWaiting(h, rec.ID)
	h.Usage = h.Usage.Add(rec.Metrics.Usage()) // once: the header learns of each end once
	switch rec.Status {
	case schemas.StepCompleted:
	case schemas.StepSkipped: // by its gate
		if h.Skipped == nil {
			h.Skipped = map[string]string{}
		}
		h.Skipped[rec.ID] = rec.Reason
	default:
		if h.Failed == nil {
			h.Failed = map[string]string{}
		}
		h.Failed[rec.ID] = rec.Error
	}
	ch.events = append(ch.events, stepEvent(h.ID, rec, now))
	advance(h, sd, now, ch)
	return true
}

// resultRecord is the record of a step ended by its agent's result.
func resultRecord(sd *state.RunSpec, h *state.RunHeader, stepID, taskID string, res schemas.AgentResult, now time.Time) *state.StepState {
	s, _ := sd.Step(stepID)
	rec := &state.StepState{ID: stepID, Agent: s.Agent, Wave: waveOf(sd, stepID), Attempt: 1, TaskID: taskID,
		DispatchedAt: h.WaveStartedAt, Deadline: h.WaveStartedAt.Add(sd.Timeout(stepID)), FinishedAt: now,
		Summary: approvedSummary(h, stepID, res.Summary), Metrics: res.Metrics}
	if taskID == schemas.StepTaskID(sd.ID, stepID, approvalAttempt, sd.Nonce) {
		rec.Attempt = approvalAttempt
	}
	if !res.Success {
		rec.Status, rec.Error, rec.Code = schemas.StepFailed, res.Err().Error(), failureCode(res.Err())
		return rec
	}
	rec.Status = schemas.StepCompleted
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
func failedRecord(sd *state.RunSpec, h *state.RunHeader, stepID, code, msg string, now time.Time) *state.StepState {
	s, _ := sd.Step(stepID)
	return &state.StepState{ID: stepID, Agent: s.Agent, Wave: waveOf(sd, stepID), Status: schemas.StepFailed, Attempt: 1,
		TaskID: schemas.StepTaskID(h.ID, stepID, 1, sd.Nonce), DispatchedAt: h.WaveStartedAt, Deadline: h.WaveStartedAt.Add(sd.Timeout(stepID)),
		FinishedAt: now, Error: msg, Code: code}
}

// follow does what a saved header update asks for: emit its events,
// publish the tasks of the wave it started, and report the run's end.
// emitted, when not nil, is called once the update's step and run events
// are out (see eventsInOrder).
func (s *Scheduler) follow(ctx context.Context, sd *state.RunSpec, h *state.RunHeader, ch *runChanges, emitted ...func()) {
	done := func() {
		for _, f := range emitted {
			f()
		}
	}
	if ch.finished {
		for _, e := range ch.events {
			s.emitStep(sd, e)
		}
		s.emitRun(h, sd)
		done()
		s.cache.drop(h.ID)
		if sd.Parent != nil {
			if err := s.endSub(ctx, sd, h); err != nil {
				// The sweep of the parent run ends the step.
				s.log.WarnContext(runContext(sd), "ending the parent's step", "parent", sd.Parent.Run, "step", sd.Parent.Step, "err", err)
			}
		}
		return
	}
	// The events of the steps that ended, then each started step's event
	// just before its task: anything its task leads to (its result, its
	// completed event, on any replica) comes after. A task that went out
	// ahead of h's write had its started event sent with it.
	for _, e := range ch.events {
		s.emitStep(sd, e)
	}
	done()
	var failed []*state.StepState // ended as they started
	for _, id := range ch.dispatch {
		if s.cache.takeAhead(h.ID, id) {
			continue
		}
		ended, err := s.start(ctx, stepStart{sd: sd, h: h, id: id, announce: true})
		if ended != nil {
			rec, rerr := s.store.RecordStep(ctx, h.ID, ended)
			if rerr != nil {
				s.log.WarnContext(runContext(sd), "recording step", "step", id, "err", rerr)
				continue
			}
			failed = append(failed, rec)
			continue
		}
		if err != nil {
			// Not published: the sweep publishes it again.
			s.log.WarnContext(runContext(sd), "dispatch", "step", id, "err", err)
		}
	}
	if len(failed) > 0 {
		// Steps that ended as they started (inputs that could not be
		// built) are settled, which may start the next wave.
		if err := s.settle(ctx, sd, failed); err != nil {
			s.log.WarnContext(runContext(sd), "failing steps", "err", err)
		}
	}
}

// waveOf is the wave of step id (0 for a step in no wave).
func waveOf(sd *state.RunSpec, id string) int {
	w, _ := sd.WaveOf(id)
	return w
}
