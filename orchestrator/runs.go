package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// How a replica runs pipelines. Every fact lives in the runs bucket (see
// runstore.go); a replica only caches what it read or wrote: the spec and
// the step records never change once written, and the header is cached with
// its revision, so the replica that wrote the last revision updates it
// without reading it first (a stale copy fails the compare-and-set, and
// the replica reads it again).

// maxCachedRuns bounds the runs a replica caches; past it the cache starts
// again empty.
const maxCachedRuns = 4096

type cachedHeader struct {
	h   *runHeader // shared: never mutated (updates work on a clone)
	rev uint64
}

type runCache struct {
	mu      sync.Mutex
	specs   map[string]*runSpec
	headers map[string]cachedHeader
	records map[string]map[string]*StepState
	// states: per run, the state this replica last wrote, with its revision.
	states map[string]cachedState
	// ahead: per run, the steps whose tasks went out ahead of the header
	// that starts their wave, and a channel closed once that header's
	// write is over (see dispatchAhead).
	ahead map[string]*aheadWave
}

type cachedState struct {
	raw []byte
	rev uint64
}

// state returns the run's state as this replica last wrote it (nil when
// not known).
func (c *runCache) state(run string) ([]byte, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.states[run]
	return e.raw, e.rev
}

// putState caches the run's state as written at rev; nil forgets it.
func (c *runCache) putState(run string, raw []byte, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if raw == nil || c.specs[run] == nil {
		delete(c.states, run)
		return
	}
	if c.states == nil {
		c.states = map[string]cachedState{}
	}
	c.states[run] = cachedState{raw, rev}
}

type aheadWave struct {
	steps map[string]bool // not yet followed up
	done  chan struct{}
}

// markAhead notes that the tasks of steps went out ahead of their header
// and returns the function that says the header's write is over.
func (c *runCache) markAhead(run string, steps []string) (over func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ahead == nil {
		c.ahead = map[string]*aheadWave{}
	}
	a := c.ahead[run]
	if a == nil {
		a = &aheadWave{steps: map[string]bool{}}
		c.ahead[run] = a
	}
	for _, id := range steps {
		a.steps[id] = true
	}
	done := make(chan struct{})
	a.done = done
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

// takeAhead reports whether step's task went out ahead of its header, and
// forgets it: the follow-up of the header publishes it no more.
func (c *runCache) takeAhead(run, step string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.ahead[run]
	if a == nil || !a.steps[step] {
		return false
	}
	delete(a.steps, step)
	return true
}

// aheadWrite returns the channel closed when the header write that follows
// tasks sent ahead in run is over, nil when none is under way.
func (c *runCache) aheadWrite(run string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.ahead[run]; a != nil {
		return a.done
	}
	return nil
}

func (c *runCache) spec(id string) *runSpec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.specs[id]
}

func (c *runCache) putSpec(sd *runSpec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.specs == nil || len(c.specs) >= maxCachedRuns {
		c.specs, c.headers, c.records, c.ahead, c.states = map[string]*runSpec{}, map[string]cachedHeader{}, map[string]map[string]*StepState{}, nil, nil
	}
	c.specs[sd.ID] = sd
}

func (c *runCache) header(id string) (*runHeader, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.headers[id]
	return e.h, e.rev
}

func (c *runCache) putHeader(h *runHeader, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.headers == nil || c.specs[h.ID] == nil {
		return // cache headers of runs whose spec is cached (bounded with it)
	}
	if e, ok := c.headers[h.ID]; !ok || rev > e.rev {
		c.headers[h.ID] = cachedHeader{h, rev}
	}
}

func (c *runCache) record(run, step string) *StepState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.records[run][step]
}

func (c *runCache) putRecord(run string, rec *StepState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.records == nil || c.specs[run] == nil {
		return
	}
	m := c.records[run]
	if m == nil {
		m = map[string]*StepState{}
		c.records[run] = m
	}
	m[rec.ID] = rec
}

func (c *runCache) drop(run string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.specs, run)
	delete(c.headers, run)
	delete(c.records, run)
	delete(c.ahead, run)
	delete(c.states, run)
}

func (o *Orchestrator) loadSpec(ctx context.Context, id string) (*runSpec, error) {
	if sd := o.cache.spec(id); sd != nil {
		return sd, nil
	}
	sd := &runSpec{}
	if _, err := o.store.getJSON(ctx, specKey(id), sd); err != nil {
		return nil, err
	}
	sd.init()
	o.cache.putSpec(sd)
	return sd, nil
}

// loadHeader returns the run's header: the cached one unless fresh.
func (o *Orchestrator) loadHeader(ctx context.Context, id string, fresh bool) (*runHeader, error) {
	if !fresh {
		if h, _ := o.cache.header(id); h != nil {
			return h, nil
		}
	}
	h := &runHeader{}
	rev, err := o.store.getJSON(ctx, id, h)
	if err != nil {
		return nil, err
	}
	o.cache.putHeader(h, rev)
	return h, nil
}

func (o *Orchestrator) loadRecord(ctx context.Context, run, step string) (*StepState, error) {
	if rec := o.cache.record(run, step); rec != nil {
		return rec, nil
	}
	rec, err := o.store.stepRecord(ctx, run, step)
	if err != nil {
		return nil, err
	}
	o.cache.putRecord(run, rec)
	return rec, nil
}

// submit validates a submitted pipeline, saves its run and dispatches its
// first wave. A pipeline that fails validation is saved as a failed run
// and reported, and nothing runs.
func (o *Orchestrator) submit(ctx context.Context, ev bus.Event) error {
	runID := ev.Ext(bus.ExtRunID)
	if runID == "" {
		runID = ev.ID
	}
	if err := bus.ValidateToken("run id", runID); err != nil {
		o.rejectRequest(ctx, o.names.PipelineSubmit(), bus.Event{ID: "invalid-run-id"}, err)
		return nil
	}
	var spec schemas.PipelineSpec
	verr := bus.DecodeData(ev, &spec, func(b []byte) error { return schemas.ValidateJSON(schemas.SchemaPipeline, b) })
	if verr == nil {
		spec, verr = normalizeSpec(spec)
	}
	var (
		contracts map[string]schemas.AgentContract
		waves     [][]string
	)
	if verr == nil {
		contracts, waves, verr = ValidatePipeline(spec, o.Lookup, o.router)
	} else {
		verr = fmt.Errorf("%w: %w", ErrInvalidPipeline, verr)
	}
	now := time.Now().UTC()
	sd := (&runSpec{ID: runID, Spec: spec, Contracts: contracts, Waves: waves, CreatedAt: now}).init()
	var ch runChanges
	h := newHeader(sd, spec.Name, verr, now, &ch)
	st := schemas.NewConversationState(runID)
	maps.Copy(st.Slots, seedSlots(spec.Seed, o.router))
	rev, err := o.store.createRun(ctx, sd, h, st)
	if err != nil {
		if errors.Is(err, ErrExists) {
			return nil // a redelivered submission: the run is under way
		}
		if errors.Is(err, ErrTooLarge) {
			o.rejectRequest(ctx, o.names.PipelineSubmit(), ev, err)
			return nil
		}
		return err
	}
	o.cache.putSpec(sd)
	o.cache.putHeader(h, rev)
	o.track(runID)
	o.follow(ctx, sd, h, &ch)
	return nil
}

// applyRunResult records the result of a step's task and does the
// follow-up (next wave, events). A duplicate or late result changes
// nothing: the step's record is written once, by the first of its result
// and its timeout.
func (o *Orchestrator) applyRunResult(ctx context.Context, runID, stepID, taskID string, res schemas.AgentResult) error {
	if bus.ValidateToken("run id", runID) != nil {
		return nil
	}
	sd, err := o.loadSpec(ctx, runID)
	if err != nil {
		return err
	}
	if _, ok := sd.index[stepID]; !ok || taskID != TaskID(runID, stepID, 1) {
		return nil
	}
	h, err := o.loadHeader(ctx, runID, false)
	if err != nil {
		return err
	}
	if early(sd, h, stepID) {
		// The task went out ahead of the header that starts its wave
		// (see dispatchAhead), and that header may be being written on
		// this replica: wait for the write.
		if over := o.cache.aheadWrite(runID); over != nil {
			select {
			case <-over:
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(o.cfg.ackWait / 2):
			}
		}
		if h, err = o.loadHeader(ctx, runID, false); err != nil {
			return err
		}
	}
	if !h.running(sd, stepID) {
		// The cached header may be behind another replica's: read it.
		if h, err = o.loadHeader(ctx, runID, true); err != nil {
			return err
		}
		if early(sd, h, stepID) {
			return fmt.Errorf("%w: step %q of run %s is in wave %d, the run is in wave %d", errEarly, stepID, runID, sd.waveOf[stepID], h.Wave)
		}
		if !h.running(sd, stepID) {
			return nil // a duplicate, or late: the step has ended
		}
	}
	rec := resultRecord(sd, h, stepID, taskID, res, time.Now().UTC())
	if !routes(rec) {
		// Nothing to route: the record and the header are written together.
		return o.settleRecords(ctx, sd, nil, []*StepState{rec}, false)
	}
	// Outputs to route: the record, then the run's state, then the header
	// are written in turn; the wave this result ends may start meanwhile.
	now := time.Now().UTC()
	next, ch := h.clone(), runChanges{}
	if next.end(sd, rec, now, &ch) {
		over := o.dispatchAhead(ctx, sd, next, &ch, []*StepState{rec}, now, false)
		defer over()
	}
	if rec, err = o.recordAndRoute(ctx, sd, rec); err != nil {
		return err
	}
	o.cache.putRecord(runID, rec)
	return o.settleRecords(ctx, sd, []*StepState{rec}, nil, true)
}

// errEarly is a result of a step whose wave has not started as far as the
// stored header says: it is handled again shortly, once the header that
// starts the wave is written.
var errEarly = errors.New("result ahead of its wave")

// early reports whether step id's wave is after the wave in progress of a
// running run: its task went out ahead of the header (see dispatchAhead).
func early(sd *runSpec, h *runHeader, id string) bool {
	w, ok := sd.waveOf[id]
	return ok && !h.Done() && w > h.Wave
}

// routes reports whether a step's record has outputs to route into the
// run's state.
func routes(rec *StepState) bool { return rec.Status == StepCompleted && len(rec.Outputs) > 0 }

// settle makes the run know that the steps of recs (their records written)
// ended: it routes completed outputs into the run's state, then updates
// the header, and does the follow-up of that update. Every part is
// idempotent, so settling a record twice (a redelivery, the sweep) is
// harmless. Records of one run settled at the same time on this replica
// share one header update: while one update is written, the next ones
// gather into a batch.
func (o *Orchestrator) settle(ctx context.Context, sd *runSpec, recs []*StepState) error {
	return o.settleRecords(ctx, sd, recs, nil, false)
}

// settleRecords is settle for written records (recs) and records not yet
// written (fresh: they have nothing to route). Fresh records are written
// in the same round trip as the header update when the cached header is
// current (commitPipelined); otherwise each is written first, the first
// writer deciding, as for recs.
func (o *Orchestrator) settleRecords(ctx context.Context, sd *runSpec, recs, fresh []*StepState, routed bool) error {
	for _, rec := range recs {
		if routed || !routes(rec) {
			continue
		}
		if err := o.routeState(ctx, sd, rec); err != nil {
			return err
		}
	}
	o.batchMu.Lock()
	b := o.batches[sd.ID]
	if b == nil {
		b = &settleBatch{done: make(chan struct{})}
		o.batches[sd.ID] = b
	}
	b.recs = append(b.recs, recs...)
	b.fresh = append(b.fresh, fresh...)
	o.batchMu.Unlock()

	unlock := o.locks.lock(sd.ID)
	o.batchMu.Lock()
	mine := o.batches[sd.ID] == b
	if mine {
		delete(o.batches, sd.ID)
	}
	o.batchMu.Unlock()
	if !mine {
		// An earlier holder of the lock wrote this batch.
		unlock()
		<-b.done
		return b.err
	}
	if len(b.fresh) > 0 {
		if next, ch, ok := o.commitPipelined(ctx, sd, b); ok {
			unlock()
			o.follow(ctx, sd, next, &ch)
			close(b.done)
			return nil
		}
		// Written key by key: each record first (the first writer
		// decides), then the header.
		for _, rec := range b.fresh {
			stored, err := o.store.recordStep(ctx, sd.ID, rec)
			if err == nil && routes(stored) {
				err = o.routeState(ctx, sd, stored) // another writer's record
			}
			if err != nil {
				unlock()
				b.err = err
				close(b.done)
				return err
			}
			o.cache.putRecord(sd.ID, stored)
			b.recs = append(b.recs, stored)
		}
	}
	h, rev := o.cache.header(sd.ID)
	var ch runChanges
	next, nrev, err := o.store.updateHeader(ctx, sd.ID, h, rev, func(h *runHeader) error {
		ch = runChanges{}
		now, changed := time.Now().UTC(), false
		for _, rec := range b.recs {
			changed = h.end(sd, rec, now, &ch) || changed
		}
		if !changed {
			return ErrUnchanged
		}
		return nil
	})
	if next != nil {
		o.cache.putHeader(next, nrev)
	}
	unlock()
	if errors.Is(err, ErrUnchanged) {
		err = nil
	} else if err == nil {
		o.follow(ctx, sd, next, &ch)
	}
	b.err = err
	close(b.done)
	return err
}

// settleBatch is the records of one run waiting for one header update.
type settleBatch struct {
	recs  []*StepState
	fresh []*StepState  // not written yet (nothing to route)
	done  chan struct{} // closed once written (or failed: err)
	err   error
}

// routeState routes a completed step's outputs into the run's slots and
// history (idempotent by task id), and caches the state it wrote.
func (o *Orchestrator) routeState(ctx context.Context, sd *runSpec, rec *StepState) error {
	o.cache.putState(sd.ID, nil, 0)
	b, rev, err := o.store.updateRunState(ctx, sd.ID, o.routing(ctx, sd, rec))
	if err == nil && b != nil {
		o.cache.putState(sd.ID, b, rev)
	}
	return err
}

// routing is the state change routing rec's outputs makes.
func (o *Orchestrator) routing(ctx context.Context, sd *runSpec, rec *StepState) func(*schemas.ConversationState) error {
	contract := sd.Contracts[rec.Agent]
	res := schemas.AgentResult{Success: true, Agent: rec.Agent, Summary: rec.Summary, Outputs: rec.Outputs}
	return func(st *schemas.ConversationState) error {
		changed, err := o.router.Apply(ctx, st, contract, rec.TaskID, res)
		if err != nil {
			return err
		}
		if !changed {
			return ErrUnchanged
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
func (o *Orchestrator) recordAndRoute(ctx context.Context, sd *runSpec, rec *StepState) (*StepState, error) {
	raw, rev := o.cache.state(sd.ID)
	if raw != nil && o.kvjs != nil && o.decidedFirst(rec, time.Now()) {
		v, err := o.store.encode(rec, nil)
		if err != nil {
			return nil, err
		}
		b, err := o.store.applyRunState(sd.ID, raw, o.routing(ctx, sd, rec))
		if err != nil && !errors.Is(err, ErrUnchanged) {
			return nil, err
		}
		rf, err := o.kvjs.PublishMsgAsync(o.kvMsg(stepKey(sd.ID, rec.ID), v, 0))
		if err != nil {
			return nil, err
		}
		var sf jetstream.PubAckFuture
		if b != nil {
			o.cache.putState(sd.ID, nil, 0) // until the write is known
			if sf, err = o.kvjs.PublishMsgAsync(o.kvMsg(stateKey(sd.ID), b, rev)); err != nil {
				_, _ = awaitAck(ctx, rf)
				return nil, err
			}
		}
		_, rerr := awaitAck(ctx, rf)
		routed := sf == nil
		if sf != nil {
			nrev, serr := awaitAck(ctx, sf)
			if routed = serr == nil; routed {
				o.cache.putState(sd.ID, b, nrev)
			}
		}
		switch {
		case rerr == nil:
		case isWrongLast(rerr):
			// Another writer's copy of the same result (rec is decided
			// first): the stored record counts.
			if rec, rerr = o.store.stepRecord(ctx, sd.ID, rec.ID); rerr != nil {
				return nil, rerr
			}
		default:
			return nil, rerr
		}
		if !routed && routes(rec) {
			if err := o.routeState(ctx, sd, rec); err != nil {
				return nil, err
			}
		}
		return rec, nil
	}
	stored, err := o.store.recordStep(ctx, sd.ID, rec)
	if err != nil {
		return nil, err
	}
	if routes(stored) {
		if err := o.routeState(ctx, sd, stored); err != nil {
			return nil, err
		}
	}
	return stored, nil
}

// follow does what a saved header update asks for: emit its events,
// publish the tasks of the wave it started, and report the run's end.
func (o *Orchestrator) follow(ctx context.Context, sd *runSpec, h *runHeader, ch *runChanges) {
	if ch.finished {
		for _, e := range ch.events {
			o.emitStep(e)
		}
		o.emit(o.names.Events(h.ID, "pipeline"), bus.TypePipelineCompleted, h.runEvent(),
			func(e *bus.Event) { e.SetExt(bus.ExtRunID, h.ID) })
		o.cache.drop(h.ID)
		return
	}
	// Tasks first (they are the critical path), then the events, in order:
	// the steps that ended, then the steps that started.
	var (
		failed  []*StepState
		started []string
	)
	for _, id := range ch.dispatch {
		if o.cache.takeAhead(h.ID, id) {
			started = append(started, id)
			continue
		}
		err := o.publishStep(ctx, sd, h, id)
		if errors.Is(err, ErrMissingInput) {
			rec, rerr := o.store.recordStep(ctx, h.ID, failedRecord(sd, h, id, err.Error(), time.Now().UTC()))
			if rerr != nil {
				o.log.Warn("recording step", "run", h.ID, "step", id, "err", rerr)
				continue
			}
			failed = append(failed, rec)
			continue
		}
		if err != nil {
			// Not published: the sweep publishes it again.
			o.log.Warn("dispatch", "run", h.ID, "step", id, "err", err)
			continue
		}
		started = append(started, id)
	}
	for _, e := range ch.events {
		o.emitStep(e)
	}
	for _, id := range started {
		s, _ := sd.step(id)
		o.emitStep(StepEvent{RunID: h.ID, Step: id, Agent: s.Agent, Status: StepRunning, Wave: h.Wave,
			Attempt: 1, TaskID: TaskID(h.ID, id, 1), At: h.WaveStartedAt})
	}
	if len(failed) > 0 {
		// Steps whose inputs could not be built fail, which may start the
		// next wave.
		if err := o.settle(ctx, sd, failed); err != nil {
			o.log.Warn("failing steps", "run", h.ID, "err", err)
		}
	}
}

// publishStep builds the inputs of a step of the wave in progress and
// publishes its task without waiting for the stream (see Send): a task that
// was not stored is published again by the sweep. pending are records
// being written: a parent among them is read from there.
func (o *Orchestrator) publishStep(ctx context.Context, sd *runSpec, h *runHeader, id string, pending ...*StepState) error {
	agent, task, meta, err := o.stepTask(ctx, sd, h, id, pending, true)
	if err != nil {
		return err
	}
	return o.dispatcher.Send(agent, task, meta)
}

// republishStep is publishStep for the sweep: it waits for the stream's
// ack, so a task the stream refuses is reported with the stream's reason.
func (o *Orchestrator) republishStep(ctx context.Context, sd *runSpec, h *runHeader, id string) error {
	agent, task, meta, err := o.stepTask(ctx, sd, h, id, nil, true)
	if err != nil {
		return err
	}
	_, err = o.dispatcher.Dispatch(ctx, agent, task, meta)
	return err
}

// errNeedsSlots is a step whose inputs read the run's slots, built where
// they may not hold all they will (see dispatchAhead).
var errNeedsSlots = errors.New("inputs read the run's slots")

// stepTask builds the task of a step of the wave in progress; withSlots
// false refuses (errNeedsSlots) a step whose inputs read the run's slots.
func (o *Orchestrator) stepTask(ctx context.Context, sd *runSpec, h *runHeader, id string, pending []*StepState, withSlots bool) (string, schemas.TaskRequest, DispatchMeta, error) {
	var slots map[string]schemas.TypedValue
	inputs, err := stepInputs(ctx, o.router, sd, id,
		func(p string) (*StepState, error) {
			for _, rec := range pending {
				if rec.ID == p {
					return rec, nil
				}
			}
			return o.loadRecord(ctx, sd.ID, p)
		},
		func() (map[string]schemas.TypedValue, error) {
			if !withSlots {
				return nil, errNeedsSlots
			}
			var err error
			if slots == nil {
				slots, err = o.store.runSlots(ctx, sd.ID)
			}
			return slots, err
		})
	s, _ := sd.step(id)
	if err != nil {
		return "", schemas.TaskRequest{}, DispatchMeta{}, fmt.Errorf("step %q (%s): %w", id, s.Agent, err)
	}
	timeout := sd.timeout(id)
	return s.Agent, schemas.TaskRequest{Inputs: inputs, Params: s.Params, TimeoutMS: timeout.Milliseconds()}, DispatchMeta{
		TaskID: TaskID(sd.ID, id, 1), RunID: sd.ID, StepID: id, Deadline: h.WaveStartedAt.Add(timeout),
		TraceParent: traceParentFor(sd.ID),
	}, nil
}

// republishWithin bounds how long after a wave started its tasks may be
// published again: well inside the tasks stream's duplicate window, so a
// task published twice is stored once.
const republishWithin = time.Minute

// track adds a run to the sweep's set.
func (o *Orchestrator) track(id string) {
	o.mu.Lock()
	o.dirty[id] = true
	o.mu.Unlock()
}

// sweepLoop keeps the set of runs to look at from a metadata-only watch of
// the run specs and sweeps them every interval: overdue steps time out,
// a wave whose tasks were maybe never published is published again (the
// deterministic task id makes that harmless), and a step whose record was
// written by a replica that died before telling the header is settled.
func (o *Orchestrator) sweepLoop(ctx context.Context, w jetstream.KeyWatcher) {
	t := time.NewTicker(o.cfg.sweep)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil && e.Operation() == jetstream.KeyValuePut {
				o.track(strings.TrimSuffix(e.Key(), specKey("")))
			}
		case <-t.C:
			o.sweep(ctx)
		}
	}
}

func (o *Orchestrator) sweep(ctx context.Context) {
	o.mu.Lock()
	for id := range o.dirty {
		o.active[id] = true
	}
	clear(o.dirty)
	ids := make([]string, 0, len(o.active))
	for id := range o.active {
		ids = append(ids, id)
	}
	o.mu.Unlock()
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		if done := o.sweepRun(ctx, id); done {
			o.mu.Lock()
			delete(o.active, id)
			o.mu.Unlock()
		}
	}
}

// sweepRun looks at the wave in progress of one run and reports whether
// the run has ended.
func (o *Orchestrator) sweepRun(ctx context.Context, id string) bool {
	h, err := o.loadHeader(ctx, id, true)
	if err != nil {
		return errors.Is(err, ErrNotFound)
	}
	if h.Done() {
		o.cache.drop(id)
		return true
	}
	sd, err := o.loadSpec(ctx, id)
	if err != nil || h.Wave < 0 || h.Wave >= len(sd.Waves) {
		return false
	}
	now := time.Now().UTC()
	var (
		ended []*StepState
		again []string
	)
	for _, sid := range sd.Waves[h.Wave] {
		if h.ended(sid) {
			continue
		}
		rec, err := o.loadRecord(ctx, id, sid)
		if err == nil {
			ended = append(ended, rec) // recorded, maybe not settled
			continue
		}
		if !errors.Is(err, ErrNotFound) {
			continue
		}
		deadline := h.WaveStartedAt.Add(sd.timeout(sid))
		switch {
		case now.After(deadline.Add(o.cfg.grace)):
			msg := fmt.Sprintf("%s: no result by the deadline %s (timeout %s)", schemas.CodeTimeout,
				deadline.UTC().Format(time.RFC3339), sd.timeout(sid))
			rec, err := o.store.recordStep(ctx, id, failedRecord(sd, h, sid, msg, now))
			if err != nil {
				o.log.Warn("timing out", "run", id, "step", sid, "err", err)
				continue
			}
			o.cache.putRecord(id, rec)
			ended = append(ended, rec)
		case !h.Republished && now.Sub(h.WaveStartedAt) > o.cfg.republish && now.Sub(h.WaveStartedAt) < republishWithin:
			again = append(again, sid)
		}
	}
	if len(ended) > 0 {
		if err := o.settle(ctx, sd, ended); err != nil {
			o.log.Warn("sweep", "run", id, "err", err)
		}
	}
	if len(again) == 0 {
		return false
	}
	// Mark first, then publish again: within the duplicate window the
	// stream stores a task id once, so this never runs a step twice.
	wave := h.Wave
	unlock := o.locks.lock(id)
	ch, rev := o.cache.header(id)
	next, nrev, err := o.store.updateHeader(ctx, id, ch, rev, func(h *runHeader) error {
		if h.Done() || h.Wave != wave || h.Republished {
			return ErrUnchanged
		}
		h.Republished = true
		return nil
	})
	if next != nil {
		o.cache.putHeader(next, nrev)
	}
	unlock()
	if err != nil {
		return false
	}
	for _, sid := range again {
		if next.running(sd, sid) {
			if err := o.republishStep(ctx, sd, next, sid); err != nil {
				o.log.Warn("re-dispatch", "run", id, "step", sid, "err", err)
			}
		}
	}
	return false
}
