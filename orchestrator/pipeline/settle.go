package pipeline

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// How a run learns that its steps ended (see the layout in package state):
// a step's end is its record, written once (create: the first writer
// decides), and one more end counted in the header. The header update that
// brings the count to the wave's width also ends the wave: it reads the
// wave's records, routes their outputs into the run's slots and starts the
// next wave. None of this reads or writes anything whose size grows with
// the run.

// settle is the one way a step's end reaches its run: it makes run sd
// know that the steps of recs (their records written) and of fresh
// (records not yet written) ended. Settling a record twice (a redelivery,
// the sweep) counts it twice, which is harmless: a wave ends only once
// every step has a record. Records of one run settled at the same time on
// this replica share one header update: while one update is written, the
// next ones gather into a batch.
func (s *Scheduler) settle(ctx context.Context, sd *state.RunSpec, recs, fresh []*state.StepState) error {
	s.batchMu.Lock()
	b := s.batches[sd.ID]
	if b == nil {
		b = &settleBatch{done: make(chan struct{})}
		s.batches[sd.ID] = b
	}
	b.recs = append(b.recs, recs...)
	b.fresh = append(b.fresh, fresh...)
	s.batchMu.Unlock()

	unlock := s.locks.lock(sd.ID)
	s.batchMu.Lock()
	mine := s.batches[sd.ID] == b
	if mine {
		delete(s.batches, sd.ID)
	}
	s.batchMu.Unlock()
	if !mine {
		// An earlier holder of the lock wrote this batch.
		unlock()
		<-b.done
		return b.err
	}
	next, ch, err := s.commit(ctx, sd, b.recs, b.fresh)
	emitted := s.eventsInOrder(sd.ID)
	unlock()
	if err == nil && next != nil {
		s.follow(ctx, sd, next, &ch, emitted)
	} else {
		emitted()
	}
	b.err = err
	close(b.done)
	return err
}

// amend is the one way a run's header changes other than by settling step
// ends (settle): a person's approval asked for or given, a wave's
// tasks marked republished. fn changes a copy of the header
// (state.ErrUnchanged: nothing to write), decided on the stored header
// when this replica's cached copy does not do; it runs under the run's
// lock, so this replica's settles and amends of one run take turns. It
// returns the header that stands, cached, and fn's ErrUnchanged.
func (s *Scheduler) amend(ctx context.Context, runID string, fn func(*state.RunHeader) error) (*state.RunHeader, error) {
	unlock := s.locks.lock(runID)
	defer unlock()
	h, rev := s.cache.header(runID)
	next, _, err := s.writeHeader(ctx, runID, h, rev, fn)
	return next, err
}

// writeHeader applies fn to the header h at revision rev (nil: read it)
// with compare-and-set until it holds, and caches what stands: amend's
// write, and the upgrade's of a header of the previous layout, whose
// caller may hold the run's lock already (a settle reading it). It returns
// the header that stands with its revision.
func (s *Scheduler) writeHeader(ctx context.Context, runID string, h *state.RunHeader, rev uint64, fn func(*state.RunHeader) error) (*state.RunHeader, uint64, error) {
	next, nrev, err := s.store.UpdateHeader(ctx, runID, h, rev, fn)
	if next != nil {
		s.cache.putHeader(next, nrev)
	}
	return next, nrev, err
}

// settleBatch is the records of one run waiting for one header update.
type settleBatch struct {
	recs  []*state.StepState
	fresh []*state.StepState // not written yet
	done  chan struct{}      // closed once written (or failed: err)
	err   error
}

// maxCommitAttempts bounds the header updates one commit tries when other
// writers keep changing the header first.
const maxCommitAttempts = 200

// commit writes the ends of recs (records written) and of fresh (records to
// write), and the header that counts them; it returns that header (nil when
// none of them is a step of the wave in progress: duplicates or late) and
// its follow-up.
//
// In one round trip when it can: the fresh records, the records of the
// steps the update skips, and the header (compare-and-set on the revision
// this replica cached) go out back to back on one connection, so the server
// stores each record before it looks at the header. When the update ends a
// wave with outputs to route, the records and the run's slots go out first
// and the header after them, so a header in a new wave implies its slots.
// The tasks of the wave the update starts go out before any of it when
// nothing written can decide otherwise (dispatchAhead). A stale header is
// read again and the ends counted on it.
//
// Fresh records are written this way only when none can lose to another
// outcome (decidedFirst); otherwise each is written on its own first, and
// the record that stands is the one counted.
//
// It is long because the writes of one round trip are sent in one order
// and their acknowledgements read back in the same; split, that order
// would live in two places.
func (s *Scheduler) commit(ctx context.Context, sd *state.RunSpec, recs, fresh []*state.StepState) (*state.RunHeader, runChanges, error) {
	now := time.Now().UTC()
	pipelined := s.store.Pipelined()
	for _, rec := range fresh {
		pipelined = pipelined && s.decidedFirst(rec, now)
	}
	if !pipelined && len(fresh) > 0 {
		for _, rec := range fresh {
			stored, err := s.store.RecordStep(ctx, sd.ID, rec)
			if err != nil {
				return nil, runChanges{}, err
			}
			recs = append(recs, stored)
		}
		fresh = nil
	}
	h, rev := s.cache.header(sd.ID)
	cached := h != nil
	for attempt := 0; attempt < maxCommitAttempts; attempt++ {
		if h == nil {
			var err error
			if h, rev, err = s.freshHeader(ctx, sd); err != nil {
				return nil, runChanges{}, err
			}
		}
		now = time.Now().UTC()
		next, ch, mine, err := s.settled(ctx, sd, h, recs, fresh, now)
		if err == nil && next == nil && cached {
			// None of them is in the cached header's wave: decide on the
			// stored header, which may be ahead of it.
			h, cached = nil, false
			continue
		}
		if err != nil || next == nil {
			return nil, ch, err
		}
		fold := ch.ended >= 0 && slices.ContainsFunc(ch.endedRecs, routes)
		over := func() {}
		if attempt == 0 {
			over = s.dispatchAhead(ctx, sd, next, &ch, mine, now, !fold)
		}
		writes := append(slices.Clone(mine), ch.skips...)
		futures := make([]state.Write, 0, len(writes)+1)
		for _, rec := range writes {
			f, err := s.store.RecordStepAsync(sd.ID, rec)
			if err != nil {
				over()
				return nil, ch, err
			}
			futures = append(futures, f)
		}
		var route func() error
		if fold {
			route = s.routeWaveAsync(ctx, sd, ch.ended, ch.endedRecs)
		} else {
			hf, err := s.store.PutHeaderAsync(next, rev, now)
			if err != nil {
				over()
				return nil, ch, err
			}
			futures = append(futures, hf)
		}
		stored, err := s.awaitRecords(ctx, sd, writes, futures[:len(writes)])
		if err == nil && route != nil {
			err = route()
		}
		var nrev uint64
		if err == nil && fold {
			var hf state.Write
			if hf, err = s.store.PutHeaderAsync(next, rev, now); err == nil {
				nrev, err = hf.Wait(ctx)
			}
		} else if !fold {
			var herr error
			nrev, herr = futures[len(writes)].Wait(ctx)
			if err == nil {
				err = herr
			}
		}
		over()
		// Fresh records are written now: from here on they count as
		// written ones, in the version that stands.
		for _, rec := range mine {
			recs = append(recs, stored[rec.ID])
		}
		fresh = nil
		switch {
		case err == nil:
			s.cache.putHeader(next, nrev)
			for _, rec := range writes {
				s.cache.putRecord(sd.ID, stored[rec.ID])
			}
			if differs(mine, stored) {
				// Another writer's record, with another outcome, stood (a
				// cancel, or replicas' clocks that disagree by more than
				// decidedFirst allows): the header is written again, at the
				// revision just written, as if the stored one had been
				// settled.
				if fixed, fch, _, ferr := s.settled(ctx, sd, h, recs, nil, now); ferr == nil && fixed != nil {
					for _, rec := range fch.skips {
						if _, ferr = s.store.RecordStep(ctx, sd.ID, rec); ferr != nil {
							break
						}
					}
					if ferr == nil && fch.ended >= 0 {
						ferr = s.routeWave(ctx, sd, s.routing(ctx, sd, fch.ended, fch.endedRecs))
					}
					if frev, perr := s.store.PutHeader(ctx, fixed, nrev); ferr == nil && perr == nil {
						s.cache.putHeader(fixed, frev)
						return fixed, fch, nil
					}
				}
				s.log.ErrorContext(runContext(sd), "run header may not match a step record")
			}
			return next, ch, nil
		case state.IsWrongLast(err):
			h, rev, cached = nil, 0, false // stale: read it again
			if err := state.Backoff(ctx, attempt); err != nil {
				return nil, ch, err
			}
		default:
			return nil, ch, err
		}
	}
	return nil, runChanges{}, state.ErrConflict
}

// differs reports whether a record of mine lost to a stored one that ends
// its step another way.
func differs(mine []*state.StepState, stored map[string]*state.StepState) bool {
	for _, rec := range mine {
		if st := stored[rec.ID]; st != rec && (st.Status != rec.Status || st.Error != rec.Error) {
			return true
		}
	}
	return false
}

// awaitRecords waits for the record writes of recs and returns the
// records that stand by step: each of recs, or the one another writer
// created first.
func (s *Scheduler) awaitRecords(ctx context.Context, sd *state.RunSpec, recs []*state.StepState, futures []state.Write) (map[string]*state.StepState, error) {
	stored := make(map[string]*state.StepState, len(recs))
	var firstErr error
	for i, f := range futures {
		rec := recs[i]
		_, err := f.Wait(ctx)
		switch {
		case err == nil:
			stored[rec.ID] = rec
		case state.IsWrongLast(err):
			have, gerr := s.store.StepRecord(ctx, sd.ID, rec.ID)
			if gerr != nil {
				firstErr = cmpErr(firstErr, gerr)
				stored[rec.ID] = rec
				continue
			}
			stored[rec.ID] = have
		default:
			firstErr = cmpErr(firstErr, err)
			stored[rec.ID] = rec
		}
	}
	return stored, firstErr
}

func cmpErr(have, err error) error {
	if have != nil {
		return have
	}
	return err
}

// settled is h with the ends of recs and fresh counted and, when they fill
// its wave, the wave ended and the next started (reading the records that
// needs). It returns nil when none of them is a step of h's wave in
// progress, and the fresh records it counted (those to write). When the
// count runs ahead of the records (a settle repeated after a crash), the
// ends are counted and the wave goes on.
func (s *Scheduler) settled(ctx context.Context, sd *state.RunSpec, h *state.RunHeader, recs, fresh []*state.StepState, now time.Time) (*state.RunHeader, runChanges, []*state.StepState, error) {
	base, baseCh := h.Clone(), newChanges()
	changed := false
	for _, rec := range recs {
		changed = countEnd(base, sd, rec, now, &baseCh) || changed
	}
	var mine []*state.StepState
	for _, rec := range fresh {
		if countEnd(base, sd, rec, now, &baseCh) {
			mine = append(mine, rec)
		}
	}
	if !changed && len(mine) == 0 {
		return nil, baseCh, nil, nil
	}
	if !waveFull(base, sd) {
		return base, baseCh, mine, nil
	}
	rs := newRecordSet(append(slices.Clone(recs), mine...))
	for {
		next, ch := base.Clone(), baseCh
		ch.events = slices.Clone(baseCh.events)
		if advance(next, sd, now, &ch, rs) {
			s.tellOthersEnds(sd, &ch, len(baseCh.events), now)
			return next, ch, mine, nil
		}
		found, err := s.loadInto(ctx, sd.ID, rs)
		if err != nil {
			return nil, baseCh, nil, err
		}
		if !found {
			return base, baseCh, mine, nil
		}
	}
}

// tellOthersEnds puts first among ch's events the ends of the wave ch
// ended that another replica settled (the first counted of ch's events
// are this update's own): that replica sends each when its write is over,
// which may be after this update starts the next wave. Sent here too,
// before any event of the next wave, a dependency's end is stored before
// its dependents' started events; the events stream keeps the first copy
// of each (emitStep's message id).
func (s *Scheduler) tellOthersEnds(sd *state.RunSpec, ch *runChanges, counted int, now time.Time) {
	if ch.ended < 0 {
		return
	}
	own := make(map[string]bool, counted)
	for _, e := range ch.events[:counted] {
		own[e.Step] = true
	}
	var others []schemas.StepEvent
	for _, rec := range ch.endedRecs {
		if !own[rec.ID] && !s.cache.told(sd.ID, rec.ID) {
			others = append(others, stepEvent(sd.ID, rec, now))
		}
	}
	if len(others) > 0 {
		ch.events = append(others, ch.events...)
	}
}

// loadConcurrency bounds the record reads one replica has in flight for
// one wave.
const loadConcurrency = 16

// loadInto reads the records rs misses (cached ones first) and reports
// false when one does not exist.
func (s *Scheduler) loadInto(ctx context.Context, run string, rs *recordSet) (bool, error) {
	missing := rs.missing
	rs.missing = nil
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		found    = true
		firstErr error
		sem      = make(chan struct{}, loadConcurrency)
	)
	for _, id := range missing {
		if rec := s.cache.record(run, id); rec != nil {
			mu.Lock() // the loads started below write rs.m too
			rs.m[id] = rec
			mu.Unlock()
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			rec, err := s.loadRecord(ctx, run, id)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				rs.m[id] = rec
			case errors.Is(err, state.ErrNotFound):
				found = false
			default:
				firstErr = cmpErr(firstErr, err)
			}
		}()
	}
	wg.Wait()
	return found && firstErr == nil, firstErr
}

// routeWaveAsync starts routing the outputs of wave w's records (in spec
// order) into the run's slots, once: the state says how many waves it
// holds. It sends the state from this replica's cached copy, when there
// is one, with the records' writes (see commit), and returns the function
// that waits for it and, when the cached copy was stale, routes again on a
// fresh read.
func (s *Scheduler) routeWaveAsync(ctx context.Context, sd *state.RunSpec, w int, recs []*state.StepState) func() error {
	fn := s.routing(ctx, sd, w, recs)
	raw, rev, cur := s.cache.stateWith(sd.ID)
	if raw != nil {
		b, next, err := s.store.ApplyRunStateFrom(sd.ID, raw, cur, fn)
		switch {
		case errors.Is(err, state.ErrUnchanged):
			return func() error { return nil }
		case err == nil:
			s.cache.putState(sd.ID, nil, 0) // until the write is known
			if f, err := s.store.PutRunStateAsync(sd.ID, b, rev); err == nil {
				return func() error {
					nrev, err := f.Wait(ctx)
					if err == nil {
						s.cache.putStateWith(sd.ID, b, nrev, next)
						return nil
					}
					if !state.IsWrongLast(err) {
						return err
					}
					return s.routeWave(ctx, sd, fn)
				}
			}
		}
	}
	return func() error { return s.routeWave(ctx, sd, fn) }
}

// routeWave routes with fn on a fresh read of the run's state (see
// UpdateRunState), and caches what it wrote.
func (s *Scheduler) routeWave(ctx context.Context, sd *state.RunSpec, fn func(*schemas.ConversationState) error) error {
	s.cache.putState(sd.ID, nil, 0)
	b, rev, err := s.store.UpdateRunState(ctx, sd.ID, fn)
	if err == nil && b != nil {
		s.cache.putState(sd.ID, b, rev)
	}
	return err
}

// routing is the state change routing the outputs of wave w's records
// makes: each record's outputs as the router routes them, in spec order,
// once (a state that holds wave w already is left as it is). The state
// keeps slots only: how each step ended is its record.
func (s *Scheduler) routing(ctx context.Context, sd *state.RunSpec, w int, recs []*state.StepState) func(*schemas.ConversationState) error {
	return func(st *schemas.ConversationState) error {
		if st.RoutedWaves > w {
			return state.ErrUnchanged
		}
		for _, rec := range recs {
			if !routes(rec) {
				continue
			}
			step, _ := sd.Step(rec.ID)
			contract, _ := stepContract(sd.Contracts, step)
			res := schemas.AgentResult{Success: true, Agent: rec.Agent, Summary: rec.Summary, Outputs: rec.Outputs}
			if _, err := s.router.Apply(ctx, st, contract, rec.TaskID, res); err != nil {
				return err
			}
		}
		st.History, st.AppliedTasks, st.RoutedWaves = nil, nil, w+1
		return nil
	}
}

// decidedFirst reports whether rec, ending its step at now, can only lose to
// a record that ends the step the same way (another replica's copy of the
// same result): it ends the step at least the sweep's grace before the
// step's deadline, and the sweep's timeout, the only writer of another
// outcome, waits until the grace after the deadline. Replicas' clocks may
// so disagree by up to twice the grace.
func (s *Scheduler) decidedFirst(rec *state.StepState, now time.Time) bool {
	return now.Add(s.cfg.Grace).Before(rec.Deadline)
}

// dispatchAhead publishes the tasks of the wave that next starts while
// next, the header that starts it, and the records it learns of (mine) are
// still being written, so the wave's agents start sooner. follow then
// publishes only the steps it did not. It returns the function to call once
// the header's write is over (a result of one of those tasks that comes in
// first waits for it).
//
// It does so only when the write cannot decide otherwise than next:
//   - every record of mine is decidedFirst;
//   - the wave in progress started less than republishWithin ago. Should the
//     cached header be stale (another replica settled these records and
//     published the wave already), the tasks published here carry the same
//     ids inside the tasks stream's duplicate window and are stored once.
//
// withSlots false leaves out a step whose inputs read the run's slots: the
// outputs of the wave that ends are not routed into them yet.
func (s *Scheduler) dispatchAhead(ctx context.Context, sd *state.RunSpec, next *state.RunHeader, ch *runChanges, mine []*state.StepState, now time.Time, withSlots bool) (over func()) {
	over = func() {}
	if ch.finished || len(ch.dispatch) == 0 || len(mine) == 0 {
		return over
	}
	for _, rec := range mine {
		if !s.decidedFirst(rec, now) || now.Sub(rec.DispatchedAt) >= republishWithin {
			return over
		}
	}
	// The events of the updates written before this one, then this one's
	// (the ends it counts, the skips it makes), then the started events:
	// no step starts, as its dependents see it, before they ended.
	s.eventsInOrder(sd.ID)()
	for _, e := range ch.events {
		s.emitStep(sd, e)
	}
	ch.events = nil
	var sent []string
	for _, id := range ch.dispatch {
		// Its started event before its task (see follow); should the task
		// not go out, follow sends both again and the events stream keeps
		// the event once (emitStep's message id).
		_, err := s.start(ctx, stepStart{sd: sd, h: next, id: id, pending: mine, noSlots: !withSlots, announce: true})
		if err == nil {
			sent = append(sent, id)
		}
	}
	if len(sent) == 0 {
		return over
	}
	return s.cache.markAhead(sd.ID, sent)
}

// eventsInOrder is taken while the run's lock is held, just before it is
// let go, and given back once the header update's events are published
// (follow): the events of a run's header updates go out in the order the
// updates were written, so no step's event comes after its run's end.
func (s *Scheduler) eventsInOrder(runID string) (emitted func()) {
	return s.locks.lock(runID + "\x00events")
}

// routes reports whether a step's record has outputs to route into the
// run's state. The outputs of a step that runs no agent (a router's
// branch) stay in its record: no contract says where they go.
func routes(rec *state.StepState) bool {
	return rec.Status == schemas.StepCompleted && len(rec.Outputs) > 0 && rec.Agent != ""
}
