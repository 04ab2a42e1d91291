package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
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
	// skips are the records of the steps the update skipped because a
	// dependency failed or was skipped: written (create) before the header.
	skips []*state.StepState
	// ended is the wave the update ended (-1: none) and endedRecs its
	// records in spec order, whose outputs are routed into the run's slots
	// before the header is written (see routeWave).
	ended     int
	endedRecs []*state.StepState
}

func newChanges() runChanges { return runChanges{ended: -1} }

// newHeader returns the header of a new run: validated (verr nil), it
// starts its first wave; rejected, it has ended. A first wave whose steps
// are all skipped cannot be (nothing before it fails), so advance needs no
// record here.
func newHeader(sd *state.RunSpec, name string, verr error, now time.Time, ch *runChanges) *state.RunHeader {
	h := &state.RunHeader{ID: sd.ID, Name: name, Status: schemas.RunRunning, Wave: -1, CreatedAt: now, UpdatedAt: now}
	if verr != nil {
		h.Status, h.Error, h.Code, h.FinishedAt = schemas.RunFailed, verr.Error(), schemas.CodeOf(verr), now
		ch.finished = true
		return h
	}
	advance(h, sd, now, ch, newRecordSet(nil))
	return h
}

// recordSet is the records advance reads: those of the wave that ends and of
// the dependencies of the steps that start. A record it lacks is noted in
// missing, and advance reports false: the caller loads what is missing and
// tries again on a fresh copy of the header.
type recordSet struct {
	m       map[string]*state.StepState
	missing []string
}

func newRecordSet(recs []*state.StepState) *recordSet {
	rs := &recordSet{m: make(map[string]*state.StepState, len(recs))}
	for _, r := range recs {
		rs.m[r.ID] = r
	}
	return rs
}

func (rs *recordSet) get(id string) (*state.StepState, bool) {
	r, ok := rs.m[id]
	if !ok && !slices.Contains(rs.missing, id) {
		rs.missing = append(rs.missing, id)
	}
	return r, ok
}

// countEnd notes that a step of the wave in progress ended as rec says: one
// more end of the wave, its waiting mark off, its event to emit. It reports
// false for a record of a step outside the wave in progress (late).
func countEnd(h *state.RunHeader, sd *state.RunSpec, rec *state.StepState, now time.Time, ch *runChanges) bool {
	if !h.Running(sd, rec.ID) {
		return false
	}
	h.Ends++
	unmarkWaiting(h, rec.ID)
	ch.events = append(ch.events, stepEvent(h.ID, rec, now))
	return true
}

// waveFull reports whether the ends counted reach the width of the wave in
// progress: it may be over (advance checks every record).
func waveFull(h *state.RunHeader, sd *state.RunSpec) bool {
	return h.Status == schemas.RunRunning && h.Wave >= 0 && h.Wave < len(sd.Waves) && h.Ends >= len(sd.Waves[h.Wave])
}

// advance moves to the next wave once every step of the wave in progress
// has a record in rs: the wave's records are tallied into the header, the
// steps of the new wave whose dependencies did not all complete are
// skipped (with a record each, in ch.skips), the others are to be
// dispatched. After the last wave the run ends. It reports false when a
// record it needs is not in rs (see recordSet); h is then half changed and
// must be dropped.
func advance(h *state.RunHeader, sd *state.RunSpec, now time.Time, ch *runChanges, rs *recordSet) bool {
	for h.Status == schemas.RunRunning {
		if h.Wave >= 0 && h.Wave < len(sd.Waves) {
			if !waveFull(h, sd) {
				return true // busy
			}
			recs := make([]*state.StepState, 0, len(sd.Waves[h.Wave]))
			for _, id := range sd.Waves[h.Wave] {
				if rec, ok := rs.get(id); ok {
					recs = append(recs, rec)
				}
			}
			if len(rs.missing) > 0 {
				return false
			}
			for _, rec := range recs {
				tally(h, sd, rec)
			}
			if ch.ended < 0 {
				ch.ended, ch.endedRecs = h.Wave, recs
			}
			if rec, ok := budgetRefused(recs); ok {
				budgetStopped(h, sd, rec, now, ch)
				return true
			}
		}
		h.Wave++
		h.Ends, h.Republished, h.Approved, h.Waiting = 0, false, nil, nil
		if h.Wave >= len(sd.Waves) {
			finish(h, now, ch)
			return true
		}
		h.WaveStartedAt = now
		if overBudget(h, sd, now, ch) {
			return true
		}
		for _, id := range sd.Waves[h.Wave] {
			reason, known := blocked(sd, id, rs)
			if !known {
				continue
			}
			if reason != "" {
				rec := blockedRecord(sd, h, id, reason, now)
				rs.m[id] = rec
				ch.skips = append(ch.skips, rec)
				h.Ends++
				ch.events = append(ch.events, stepEvent(h.ID, rec, now))
				continue
			}
			ch.dispatch = append(ch.dispatch, id)
			markWaiting(h, sd, id)
		}
		if len(rs.missing) > 0 {
			return false
		}
	}
	return true
}

// tally adds how a step of a wave that is over ended to the header's counts.
func tally(h *state.RunHeader, sd *state.RunSpec, rec *state.StepState) {
	h.Usage = h.Usage.Add(rec.Metrics.Usage())
	s, _ := sd.Step(rec.ID)
	var line string
	switch rec.Status {
	case schemas.StepCompleted:
		h.Completed++
		return
	case schemas.StepSkipped:
		h.SkippedSteps++
		line = fmt.Sprintf("step %q (%s) skipped: %s", rec.ID, s.Agent, rec.Reason)
	default:
		h.FailedSteps++
		if rec.Code == schemas.CodeCancelled {
			h.CancelledSteps++
		}
		line = fmt.Sprintf("step %q (%s) failed: %s", rec.ID, s.Agent, rec.Error)
	}
	if len(h.Failures) < state.MaxFailureLines {
		h.Failures = append(h.Failures, line)
	}
}

// blocked returns why step id cannot run ("" when it can), and false when
// the record of a dependency is not in rs. Dependencies are in earlier
// waves, which have ended. A step runs when every dependency completed, or
// when some did and the others are off the path a router chose (a branch
// it did not choose, or a step after one): that is how steps after several
// branches of a router join.
func blocked(sd *state.RunSpec, id string, rs *recordSet) (string, bool) {
	s, _ := sd.Step(id)
	var off string // a dependency off the chosen path
	completed := false
	for _, d := range s.DependsOn {
		if !sd.Has(d) {
			return fmt.Sprintf("dependency %q does not exist", d), true
		}
		rec, ok := rs.get(d)
		if !ok {
			return "", false
		}
		switch {
		case rec.Status == schemas.StepFailed:
			return fmt.Sprintf("dependency %q failed: %s", d, rec.Error), true
		case rec.Status != schemas.StepSkipped:
			completed = true
		case offPath(rec.Reason):
			if off == "" {
				off = d
			}
		default:
			return fmt.Sprintf("dependency %q was skipped", d), true
		}
	}
	if off != "" && !completed {
		return fmt.Sprintf("dependency %q was skipped%s", off, notTaken), true
	}
	return "", true
}

// notTaken ends the skip reason of a step after a branch its router did
// not choose.
const notTaken = " (its branch was not taken)"

// offPath reports whether a skip reason says the step is off the path a
// router chose: a branch it did not choose, or a step after one.
func offPath(reason string) bool {
	return strings.HasPrefix(reason, routerSkipPrefix) || strings.HasSuffix(reason, notTaken)
}

// finish ends a run whose last wave is over: failed when a step failed,
// with the first failures (and skips) as its error; cancelled (code
// cancelled) when one of those was cancelled.
func finish(h *state.RunHeader, now time.Time, ch *runChanges) {
	h.Status = schemas.RunCompleted
	// Skips alone (conditions, routers) do not fail the run; a step that
	// failed does, and the steps skipped because of it are told too.
	if h.FailedSteps > 0 {
		h.Status = schemas.RunFailed
		h.Error, h.Code = strings.Join(h.Failures, "; "), schemas.CodeStepFailed
		if h.CancelledSteps > 0 {
			h.Status, h.Code = schemas.RunCancelled, schemas.CodeCancelled
		}
		if more := h.FailedSteps + h.SkippedSteps - len(h.Failures); more > 0 {
			h.Error += fmt.Sprintf("; and %d more", more)
		}
	}
	h.FinishedAt = now
	ch.finished = true
}

// blockedRecord is the record of a step skipped because a dependency failed
// or was skipped.
func blockedRecord(sd *state.RunSpec, h *state.RunHeader, id, reason string, now time.Time) *state.StepState {
	s, _ := sd.Step(id)
	return &state.StepState{ID: id, Agent: s.Agent, Wave: h.Wave, Status: schemas.StepSkipped, DispatchedAt: now, FinishedAt: now, Reason: reason}
}

// resultRecord is the record of a step ended by its agent's result.
func resultRecord(sd *state.RunSpec, h *state.RunHeader, stepID, taskID string, res schemas.AgentResult, now time.Time) *state.StepState {
	s, _ := sd.Step(stepID)
	rec := &state.StepState{ID: stepID, Agent: s.Agent, Wave: waveOf(sd, stepID), Attempt: 1, TaskID: taskID,
		DispatchedAt: h.WaveStartedAt, Deadline: h.WaveStartedAt.Add(sd.Timeout(stepID)), FinishedAt: now,
		Summary: approvedSummary(h, stepID, res.Summary), Metrics: res.Metrics}
	if taskID == pipelinespec.StepTaskID(sd.ID, stepID, approvalAttempt, sd.Nonce) {
		rec.Attempt = approvalAttempt
	}
	if !res.Success {
		rec.Status, rec.Error, rec.Code = schemas.StepFailed, res.Err().Error(), schemas.CodeOf(res.Err())
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
		TaskID: pipelinespec.StepTaskID(h.ID, stepID, 1, sd.Nonce), DispatchedAt: h.WaveStartedAt, Deadline: h.WaveStartedAt.Add(sd.Timeout(stepID)),
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
			if err := endSub(ctx, schedEnv{s}, sd, h); err != nil {
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
		if err := s.settle(ctx, sd, failed, nil); err != nil {
			s.log.WarnContext(runContext(sd), "failing steps", "err", err)
		}
	}
}

// waveOf is the wave of step id (0 for a step in no wave).
func waveOf(sd *state.RunSpec, id string) int {
	w, _ := sd.WaveOf(id)
	return w
}
