package pipeline

import (
	"context"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/state"
)

// commitPipelined writes the fresh records of b (create: the first writer
// decides) and the header that learns of them and of b's written records
// (compare-and-set on the cached header) in one round trip: the writes go
// out back to back on one connection, so the server stores each record
// before it looks at the header, and the replies are awaited together.
//
// The outcomes:
//   - all written: done;
//   - the header is stale: the records this call created stand, and it
//     reports false; the caller writes key by key (finding those records
//     already there) and updates the header on a fresh read;
//   - a record was there already (another replica wrote it first) but the
//     header was written: the stored record is the one that counts, and it
//     ended the step the same way, so the header is right. Records that could
//     lose to another outcome (the sweep's timeout) are not written this way
//     at all (see decidedFirst): the caller writes them key by key. Should
//     clocks disagree by more than that allows and the stored record say
//     otherwise, the header is rewritten, at the revision just written, as if
//     the stored record had been settled; should that rewrite lose a race (a
//     third writer in the same instant), the error is logged.
//   - an unknown outcome (a lost acknowledgement): it reports false and
//     the caller reconciles by reading; a follow-up lost that way (the next
//     wave's tasks) is published again by the sweep.
//
// A fresh record of a step the cached header says is not running is a
// duplicate or late result and is not written.
//
// It is long because the pipelined round trip is one sequence of publishes
// whose acknowledgements are read back in the same order; split, the order
// between the writes and their reading would live in two places.
func (s *Scheduler) commitPipelined(ctx context.Context, sd *state.RunSpec, b *settleBatch) (*state.RunHeader, runChanges, bool) {
	var ch runChanges
	h, rev := s.cache.header(sd.ID)
	if h == nil || !s.store.Pipelined() {
		return nil, ch, false
	}
	now := time.Now().UTC()
	next, changed := h.Clone(), false
	for _, rec := range b.recs {
		changed = end(next, sd, rec, now, &ch) || changed
	}
	var mine []*state.StepState
	for _, rec := range b.fresh {
		if !s.decidedFirst(rec, now) {
			return nil, runChanges{}, false
		}
		if end(next, sd, rec, now, &ch) {
			mine = append(mine, rec)
		}
	}
	if !changed && len(mine) == 0 {
		return nil, ch, false
	}
	// The wave's tasks first: they are the critical path.
	over := s.dispatchAhead(ctx, sd, next, &ch, mine, now, true)
	defer over()
	futures := make([]state.Write, 0, len(mine))
	for _, rec := range mine {
		f, err := s.store.RecordStepAsync(sd.ID, rec)
		if err != nil {
			return nil, ch, false
		}
		futures = append(futures, f)
	}
	hf, err := s.store.PutHeaderAsync(next, rev, now)
	if err != nil {
		return nil, ch, false
	}
	var taken []*state.StepState // records another writer created first
	for i, f := range futures {
		_, err := f.Wait(ctx)
		switch {
		case err == nil:
			s.cache.putRecord(sd.ID, mine[i])
		case state.IsWrongLast(err):
			taken = append(taken, mine[i])
		default:
			_, _ = hf.Wait(ctx)
			return nil, ch, false
		}
	}
	nrev, err := hf.Wait(ctx)
	if err != nil {
		return nil, ch, false // stale (or unknown): decide on what is stored
	}
	s.cache.putHeader(next, nrev)
	if len(taken) == 0 {
		return next, ch, true
	}

	// Some records were written first by another writer: settle what is
	// stored instead of this call's versions.
	same := true
	recs := make(map[string]*state.StepState, len(mine))
	for _, rec := range mine {
		recs[rec.ID] = rec
	}
	for _, rec := range taken {
		stored, err := s.store.StepRecord(ctx, sd.ID, rec.ID)
		if err != nil {
			s.log.ErrorContext(runContext(sd), "run header may not match a step record", "step", rec.ID, "err", err)
			return nil, ch, false
		}
		if routes(stored) {
			if err := s.routeState(ctx, sd, stored); err != nil {
				s.log.ErrorContext(runContext(sd), "routing a step record", "step", rec.ID, "err", err)
				return nil, ch, false
			}
		}
		s.cache.putRecord(sd.ID, stored)
		recs[rec.ID] = stored
		same = same && stored.Status == rec.Status && stored.Error == rec.Error
	}
	if same {
		return next, ch, true
	}
	fixed, fch := h.Clone(), runChanges{}
	for _, rec := range b.recs {
		end(fixed, sd, rec, now, &fch)
	}
	for _, rec := range mine {
		end(fixed, sd, recs[rec.ID], now, &fch)
	}
	if nrev, err = s.store.PutHeader(ctx, fixed, nrev); err != nil {
		s.log.ErrorContext(runContext(sd), "run header may not match a step record", "err", err)
		return nil, ch, false
	}
	s.cache.putHeader(fixed, nrev)
	return fixed, fch, true
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
// outputs of mine are not routed into them yet.
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
