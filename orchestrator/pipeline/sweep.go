package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
)

// track adds a run to the sweep's set.
func (s *Scheduler) track(id string) {
	s.mu.Lock()
	s.dirty[id] = true
	s.mu.Unlock()
}

// StartSweep starts the sweep (see sweepLoop) in the background until ctx
// ends; done is closed when it has stopped.
func (s *Scheduler) StartSweep(ctx context.Context) (done <-chan struct{}, err error) {
	w, err := s.store.WatchRunSpecs(ctx)
	if err != nil {
		return nil, fmt.Errorf("pipeline: watching runs: %w", err)
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		s.sweepLoop(ctx, w)
	}()
	return ch, nil
}

// sweepLoop keeps the set of runs to look at from a metadata-only watch of
// the run specs and sweeps them every interval: overdue steps time out,
// a wave whose tasks were maybe never published is published again (the
// deterministic task id makes that harmless), and a step whose record was
// written by a replica that died before telling the header is settled.
// A watch that ends while the replica runs (the cluster moved under it)
// is made again at the next interval, the sweep going on meanwhile: a new
// watch lists every run again, so none started meanwhile is missed.
func (s *Scheduler) sweepLoop(ctx context.Context, w jetstream.KeyWatcher) {
	t := time.NewTicker(s.cfg.Sweep)
	defer t.Stop()
	defer func() {
		if w != nil {
			_ = w.Stop()
		}
	}()
	updates := w.Updates()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-updates:
			if !ok {
				s.log.Warn("pipeline: the watch of runs ended; watching again at the next sweep")
				_ = w.Stop()
				w, updates = nil, nil
				continue
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			if id, ok := state.RunOfSpecKey(e.Key()); ok {
				s.track(id)
			}
		case <-t.C:
			if w == nil {
				if nw, err := s.store.WatchRunSpecs(ctx); err == nil {
					w, updates = nw, nw.Updates()
				} else {
					s.log.Warn("pipeline: watching runs again", "err", err)
				}
			}
			s.sendUnsent(ctx)
			s.sweep(ctx)
		}
	}
}

func (s *Scheduler) sweep(ctx context.Context) {
	s.mu.Lock()
	for id := range s.dirty {
		s.active[id] = true
	}
	clear(s.dirty)
	ids := make([]string, 0, len(s.active))
	for id := range s.active {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		if done := s.sweepRun(ctx, id); done {
			s.mu.Lock()
			delete(s.active, id)
			s.mu.Unlock()
		}
	}
}

// sweepRun looks at the wave in progress of one run and reports whether
// the run has ended: each running step's kind tends it (a loop's items, a
// sub-pipeline's child), an overdue step ends as its kind says (expire),
// and a wave whose tasks may have been lost is published again. It reads a
// step's record only when the step is overdue or to be published again,
// so a sweep of a wave of agent steps before their deadlines reads nothing
// per step.
//
// It is long because each case of the wave in progress (timed out, lost
// task, a loop's items, a stalled count) reads and writes the same header
// revision.
func (s *Scheduler) sweepRun(ctx context.Context, id string) bool {
	h, err := s.loadHeader(ctx, id, true)
	if err != nil {
		return errors.Is(err, state.ErrNotFound)
	}
	if h.Done() {
		s.cache.drop(id)
		s.forgetStall(id)
		return true
	}
	sd, err := s.loadSpec(ctx, id)
	if err != nil || h.Wave < 0 || h.Wave >= len(sd.Waves) {
		return false
	}
	now := time.Now().UTC()
	var (
		ended   []*state.StepState
		again   []string
		overdue []string // steps this sweep timed out
	)
	age := now.Sub(h.WaveStartedAt)
	republish := age > s.cfg.Republish && age < republishWithin && (!h.Republished || s.republishAgain(id, h.Wave, age))
	for _, sid := range sd.Waves[h.Wave] {
		step, _ := sd.Step(sid)
		k, err := kindOf(step)
		if err != nil {
			continue // failed as it started
		}
		deadline := h.WaveStartedAt.Add(sd.Timeout(sid))
		late := now.After(deadline.Add(s.cfg.Grace))
		if !late {
			k.tend(ctx, schedEnv{s}, sd, h, sid, now)
		}
		if !late && !republish {
			continue
		}
		if _, err := s.loadRecord(ctx, id, sid); !errors.Is(err, state.ErrNotFound) {
			continue // ended (settled by its writer, or see sweepStall), or unreadable
		}
		if !late {
			if _, agent := k.(agentKind); agent || !h.Republished {
				again = append(again, sid) // published again more than once: agent tasks only
			}
			continue
		}
		rec := k.expire(sd, h, sid, deadline, now)
		stored, err := s.store.RecordStep(ctx, id, rec)
		if err != nil {
			s.log.WarnContext(runContext(sd), "timing out", "step", sid, "err", err)
			continue
		}
		s.cache.putRecord(id, stored)
		if stored == rec {
			ended = append(ended, rec) // another writer's record is its to settle
			overdue = append(overdue, sid)
		}
	}
	if len(ended) > 0 {
		if err := s.settle(ctx, sd, ended, nil); err != nil {
			s.log.WarnContext(runContext(sd), "sweep", "err", err)
		}
	}
	for _, sid := range overdue {
		s.cancelStep(ctx, sd, sid, stepCancel{why: fmt.Sprintf("timed out (timeout %s)", sd.Timeout(sid)), depth: pipelinespec.MaxPipelineDepth})
	}
	if len(ended) == 0 && len(again) == 0 {
		s.sweepStall(ctx, sd, h, now)
	}
	if len(again) == 0 {
		return false
	}
	// Mark first, then publish again: within the duplicate window the
	// stream stores a task id once, so this never runs a step twice. A
	// wave marked already (by this replica or another) is published again
	// as it is: see republishAgain.
	next := h
	if !h.Republished {
		wave := h.Wave
		nh, err := s.amend(ctx, id, func(h *state.RunHeader) error {
			if h.Done() || h.Wave != wave || h.Republished {
				return state.ErrUnchanged
			}
			h.Republished = true
			return nil
		})
		if err != nil {
			return false
		}
		next = nh
		s.republishAgain(id, wave, age) // the first of the wave
	}
	var atOnce []*state.StepState // steps that ended as they started (a gate, a router)
	for _, sid := range again {
		ended, err := s.start(ctx, stepStart{sd: sd, h: next, id: sid, confirm: true})
		if ended != nil {
			ended, err = s.store.RecordStep(ctx, id, ended)
		}
		if err != nil {
			s.log.WarnContext(runContext(sd), "re-dispatch", "step", sid, "err", err)
			continue
		}
		if ended != nil {
			atOnce = append(atOnce, ended)
		}
	}
	if len(atOnce) > 0 {
		if err := s.settle(ctx, sd, atOnce, nil); err != nil {
			s.log.WarnContext(runContext(sd), "sweep", "err", err)
		}
	}
	return false
}

// republishAgain reports whether the sweep should publish the tasks of
// wave of run id again, at age since the wave started, and notes it: at
// twice the age of this replica's last publish of the wave (2 s, 4 s, 8 s,
// ... inside republishWithin, which the duplicate window covers). Once is
// not enough: a publish made as a node back from a partition took its
// place again could be answered and yet not stored (the node still took
// itself for the stream's leader), and the step would wait out its
// timeout, an hour for some agents.
func (s *Scheduler) republishAgain(id string, wave int, age time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.republished == nil {
		s.republished = map[string]republishAt{}
	}
	last, ok := s.republished[id]
	if ok && last.wave == wave && age < 2*last.age {
		return false
	}
	s.republished[id] = republishAt{wave: wave, age: age}
	return true
}

// republishAt is when (the wave's age) a replica last published a run's
// wave again.
type republishAt struct {
	wave int
	age  time.Duration
}

// stallAfter is how long a run's header may stay unchanged before the
// sweep checks whether every step of its wave has a record all the same:
// a step whose record was written by a process that died before counting
// it, and whose result is not delivered again (the sweep's own timeouts,
// a step that ended as it started), is counted then.
const stallAfter = 5 * time.Second

// sweepStall settles every record of the wave in progress when the header
// has not changed for stallAfter and each step of the wave has a record:
// the count fell behind (see stallAfter). It looks at most once per
// stallAfter per run.
func (s *Scheduler) sweepStall(ctx context.Context, sd *state.RunSpec, h *state.RunHeader, now time.Time) {
	if now.Sub(h.UpdatedAt) < stallAfter {
		return
	}
	s.mu.Lock()
	if s.stalls == nil {
		s.stalls = map[string]time.Time{}
	}
	last := s.stalls[sd.ID]
	if now.Sub(last) < stallAfter {
		s.mu.Unlock()
		return
	}
	s.stalls[sd.ID] = now
	s.mu.Unlock()
	recs := make([]*state.StepState, 0, len(sd.Waves[h.Wave]))
	for _, id := range sd.Waves[h.Wave] {
		rec, err := s.loadRecord(ctx, sd.ID, id)
		if err != nil {
			return // running (the usual case: one read), or unreadable
		}
		recs = append(recs, rec)
	}
	s.log.InfoContext(runContext(sd), "every step of the wave has ended: settling its records", "wave", h.Wave)
	if err := s.settle(ctx, sd, recs, nil); err != nil {
		s.log.WarnContext(runContext(sd), "sweep", "err", err)
	}
}

// forgetStall drops what sweepStall and republishAgain remember of a run
// that ended.
func (s *Scheduler) forgetStall(id string) {
	s.mu.Lock()
	delete(s.stalls, id)
	delete(s.republished, id)
	s.mu.Unlock()
}
