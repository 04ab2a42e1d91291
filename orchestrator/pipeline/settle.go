package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// settle makes the run know that the steps of recs (their records written)
// ended: it routes completed outputs into the run's state, then updates
// the header, and does the follow-up of that update. Every part is
// idempotent, so settling a record twice (a redelivery, the sweep) is
// harmless. Records of one run settled at the same time on this replica
// share one header update: while one update is written, the next ones
// gather into a batch.
func (s *Scheduler) settle(ctx context.Context, sd *state.RunSpec, recs []*state.StepState) error {
	return s.settleRecords(ctx, sd, recs, nil, false)
}

// settleRecords is settle for written records (recs) and records not yet
// written (fresh: they have nothing to route). Fresh records are written
// in the same round trip as the header update when the cached header is
// current (commitPipelined); otherwise each is written first, the first
// writer deciding, as for recs.
//
// It is long because the batch, the header update and its fallback share
// one compare-and-set loop; the parts apart would each need its state.
func (s *Scheduler) settleRecords(ctx context.Context, sd *state.RunSpec, recs, fresh []*state.StepState, routed bool) error {
	for _, rec := range recs {
		if routed || !routes(rec) {
			continue
		}
		if err := s.routeState(ctx, sd, rec); err != nil {
			return err
		}
	}
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
	if len(b.fresh) > 0 {
		if next, ch, ok := s.commitPipelined(ctx, sd, b); ok {
			emitted := s.eventsInOrder(sd.ID)
			unlock()
			s.follow(ctx, sd, next, &ch, emitted)
			close(b.done)
			return nil
		}
		// Written key by key: each record first (the first writer
		// decides), then the header.
		for _, rec := range b.fresh {
			stored, err := s.store.RecordStep(ctx, sd.ID, rec)
			if err == nil && routes(stored) {
				err = s.routeState(ctx, sd, stored) // another writer's record
			}
			if err != nil {
				unlock()
				b.err = err
				close(b.done)
				return err
			}
			s.cache.putRecord(sd.ID, stored)
			b.recs = append(b.recs, stored)
		}
	}
	h, rev := s.cache.header(sd.ID)
	var ch runChanges
	next, nrev, err := s.store.UpdateHeader(ctx, sd.ID, h, rev, func(h *state.RunHeader) error {
		ch = runChanges{}
		now, changed := time.Now().UTC(), false
		for _, rec := range b.recs {
			changed = end(h, sd, rec, now, &ch) || changed
		}
		if !changed {
			return state.ErrUnchanged
		}
		return nil
	})
	if next != nil {
		s.cache.putHeader(next, nrev)
	}
	emitted := s.eventsInOrder(sd.ID)
	unlock()
	if errors.Is(err, state.ErrUnchanged) {
		err = nil
		emitted()
	} else if err == nil {
		s.follow(ctx, sd, next, &ch, emitted)
	} else {
		emitted()
	}
	b.err = err
	close(b.done)
	return err
}

// settleBatch is the records of one run waiting for one header update.
type settleBatch struct {
	recs  []*state.StepState
	fresh []*state.StepState // not written yet (nothing to route)
	done  chan struct{}      // closed once written (or failed: err)
	err   error
}

// routeState routes a completed step's outputs into the run's slots and
// history (idempotent by task id), and caches the state it wrote.
func (s *Scheduler) routeState(ctx context.Context, sd *state.RunSpec, rec *state.StepState) error {
	s.cache.putState(sd.ID, nil, 0)
	b, rev, err := s.store.UpdateRunState(ctx, sd.ID, s.routing(ctx, sd, rec))
	if err == nil && b != nil {
		s.cache.putState(sd.ID, b, rev)
	}
	return err
}

// routing is the state change routing rec's outputs makes.
func (s *Scheduler) routing(ctx context.Context, sd *state.RunSpec, rec *state.StepState) func(*schemas.ConversationState) error {
	step, _ := sd.Step(rec.ID)
	contract, _ := stepContract(sd.Contracts, step)
	res := schemas.AgentResult{Success: true, Agent: rec.Agent, Summary: rec.Summary, Outputs: rec.Outputs}
	return func(st *schemas.ConversationState) error {
		changed, err := s.router.Apply(ctx, st, contract, rec.TaskID, res)
		if err != nil {
			return err
		}
		if !changed {
			return state.ErrUnchanged
		}
		return nil
	}
}

// recordAndRoute writes a fresh record with outputs and routes them into
// the run's state. When this replica wrote the state last (it is cached
// with its revision) and rec cannot lose to another outcome, the record
// (create) and the state (compare-and-set) go out back to back and their
// acknowledgements are awaited together; otherwise, or when the state
// moved on, one after the other. It returns the stored record.
func (s *Scheduler) recordAndRoute(ctx context.Context, sd *state.RunSpec, rec *state.StepState) (*state.StepState, error) {
	raw, rev, cur := s.cache.stateWith(sd.ID)
	if raw != nil && s.store.Pipelined() && s.decidedFirst(rec, time.Now()) {
		b, next, err := s.store.ApplyRunStateFrom(sd.ID, raw, cur, s.routing(ctx, sd, rec))
		if err != nil && !errors.Is(err, state.ErrUnchanged) {
			return nil, err
		}
		rf, err := s.store.RecordStepAsync(sd.ID, rec)
		if err != nil {
			return nil, err
		}
		var sf *state.Write
		if b != nil {
			s.cache.putState(sd.ID, nil, 0) // until the write is known
			w, err := s.store.PutRunStateAsync(sd.ID, b, rev)
			if err != nil {
				_, _ = rf.Wait(ctx)
				return nil, err
			}
			sf = &w
		}
		_, rerr := rf.Wait(ctx)
		routed := sf == nil
		if sf != nil {
			nrev, serr := sf.Wait(ctx)
			if routed = serr == nil; routed {
				s.cache.putStateWith(sd.ID, b, nrev, next)
			}
		}
		switch {
		case rerr == nil:
		case state.IsWrongLast(rerr):
			// Another writer's copy of the same result (rec is decided
			// first): the stored record counts.
			if rec, rerr = s.store.StepRecord(ctx, sd.ID, rec.ID); rerr != nil {
				return nil, rerr
			}
		default:
			return nil, rerr
		}
		if !routed && routes(rec) {
			if err := s.routeState(ctx, sd, rec); err != nil {
				return nil, err
			}
		}
		return rec, nil
	}
	stored, err := s.store.RecordStep(ctx, sd.ID, rec)
	if err != nil {
		return nil, err
	}
	if routes(stored) {
		if err := s.routeState(ctx, sd, stored); err != nil {
			return nil, err
		}
	}
	return stored, nil
}

// eventsInOrder is taken while the run's lock is held, just before it is
// let go, and given back once the header update's events are published
// (follow): the events of a run's header updates go out in the order the
// updates were written, so no step's event comes after its run's end.
func (s *Scheduler) eventsInOrder(runID string) (emitted func()) {
	return s.locks.lock(runID + "\x00events")
}
