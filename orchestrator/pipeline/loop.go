package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// The loop engine runs the steps that run their agent more than once:
// for_each (kind_foreach.go) and repeat (kind_repeat.go). A loop keeps its
// items, its progress and each item's end in keys of their own (see
// state/loop.go), so an item's end reads and writes a few small values
// whatever the number of items, and any replica carries on where another
// stopped: an item's result is applied by whichever replica takes it, and
// the sweep re-publishes the running items of a loop that stalled.

// loopDriver is what differs between the loop kinds.
type loopDriver interface {
	// validate is the loop's checks at submit (stepKind.validate).
	validate(c *checks, step pipelinespec.PipelineStep) []error
	// prepare builds the loop's items and shared inputs and its progress
	// (N and Parallel set) as the step starts.
	prepare(ctx context.Context, e env, st stepStart) (*state.LoopItems, *state.LoopProgress, error)
	// inputs are the inputs of item i's task.
	inputs(ctx context.Context, e env, sd *state.RunSpec, id string, items *state.LoopItems, i int) (map[string]schemas.TypedValue, error)
	// decide is called with the record of item i before its end is
	// written to the progress: it returns why the loop stops ("" to go on).
	// and, when that fails the step, its error code.
	decide(ctx context.Context, e env, sd *state.RunSpec, id string, p *state.LoopProgress, i int, rec *state.StepState) (stop, code string, err error)
	// finish is the step's record once the loop is over.
	finish(ctx context.Context, e env, sd *state.RunSpec, h *state.RunHeader, id string, p *state.LoopProgress) (*state.StepState, error)
}

// loopKind adapts a loopDriver to stepKind.
type loopKind struct {
	oneTask // its deadline: the whole loop's
	d       loopDriver
}

func (k loopKind) validate(c *checks, step pipelinespec.PipelineStep) []error {
	return k.d.validate(c, step)
}

// owns: the tasks of its items (pipelinespec.LoopTaskID).
func (loopKind) owns(sd *state.RunSpec, id, taskID string) bool {
	_, item := pipelinespec.LoopItem(sd.ID, id, taskID, sd.Nonce)
	return item
}

// result ends an item (applyItem); the loop ends with its last.
func (loopKind) result(ctx context.Context, e env, sd *state.RunSpec, h *state.RunHeader, id, taskID string, res schemas.AgentResult) error {
	var err error
	if !h.Running(sd, id) {
		if h, err = e.header(ctx, sd.ID, true); err != nil || !h.Running(sd, id) {
			return err // nil: a late item
		}
	}
	return applyItem(ctx, e, sd, h, id, taskID, res)
}

// tend ends a loop that is over but was not ended, and publishes again the
// items of one that stood still (sweepLoopStep).
func (loopKind) tend(ctx context.Context, e env, sd *state.RunSpec, h *state.RunHeader, id string, now time.Time) {
	if _, err := e.record(ctx, sd.ID, id); !errors.Is(err, state.ErrNotFound) {
		return // ended
	}
	sweepLoopStep(ctx, e, sd, h, id, now)
}

// cancel stops the running items' tasks or, for a for_each that runs a
// pipeline per item, cancels their child runs.
func (loopKind) cancel(ctx context.Context, e env, sd *state.RunSpec, id string, c stepCancel) {
	step, _ := sd.Step(id)
	if step.Pipeline == nil && (!c.tasks || step.Agent == "") || step.Pipeline != nil && c.depth <= 0 {
		return
	}
	p, _, err := e.store().LoopProgress(ctx, sd.ID, id)
	if err != nil {
		return
	}
	var out []string
	for _, i := range p.Running() {
		if step.Pipeline != nil {
			out = append(out, itemRunID(sd.ID, id, i))
		} else {
			out = append(out, pipelinespec.LoopTaskID(sd.ID, id, i, sd.Nonce))
		}
	}
	if step.Pipeline != nil {
		cancelChildren(ctx, e, sd, id, c, out)
		return
	}
	e.stopTasks(sd, step.Agent, out)
}

// start stores the loop's items and progress (or reads them: the sweep
// starts a step again) and publishes its running items; a loop with no
// items, or one that is over, ends at once.
func (k loopKind) start(ctx context.Context, e env, st stepStart) (*state.StepState, error) {
	sd, id := st.sd, st.id
	items, err := e.store().LoopItems(ctx, sd.ID, id)
	var p *state.LoopProgress
	var rev uint64
	if errors.Is(err, state.ErrNotFound) {
		var prep *state.LoopProgress
		items, prep, err = k.d.prepare(ctx, e, st)
		if errors.Is(err, errBadItems) || errors.Is(err, route.ErrMissingInput) || errors.Is(err, schemas.ErrInvalidValue) {
			return loopFailure(sd, st.h, id, err), nil
		}
		if err != nil {
			return nil, err // the store's trouble: the sweep starts it again
		}
		prep.Fill()
		items, p, rev, err = e.store().StartLoop(ctx, sd.ID, id, items, prep)
		if errors.Is(err, state.ErrTooLarge) {
			return loopFailure(sd, st.h, id, err), nil
		}
	} else if err == nil {
		p, rev, err = e.store().LoopProgress(ctx, sd.ID, id)
	}
	if err != nil {
		return nil, err // the sweep starts it again
	}
	e.loops().put(sd.ID, id, items, p, rev)
	if p.Over() || p.Stop != "" && len(p.Running()) == 0 {
		return k.d.finish(ctx, e, sd, st.h, id, p)
	}
	return nil, sendItems(ctx, e, k, sd, st.h, id, items, p.Running(), st.confirm)
}

// loopFailure is the record of a loop step that could not start.
func loopFailure(sd *state.RunSpec, h *state.RunHeader, id string, err error) *state.StepState {
	code := schemas.CodeInvalidInput
	if c := schemas.CodeOf(err); errors.Is(err, state.ErrTooLarge) || errors.Is(err, schemas.ErrLimitExceeded) {
		code = c
	}
	step, _ := sd.Step(id)
	return failedRecord(sd, h, id, code, fmt.Sprintf("step %q (%s): %v", id, step.Agent, err), time.Now().UTC())
}

// sendItems publishes the tasks of items of loop step id.
func sendItems(ctx context.Context, e env, k loopKind, sd *state.RunSpec, h *state.RunHeader, id string, items *state.LoopItems, which []int, confirm bool) error {
	step, _ := sd.Step(id)
	var errs []error
	if step.Pipeline != nil { // a child run per item
		for _, i := range which {
			errs = append(errs, startItemRun(ctx, e, k, sd, h, id, items, i))
		}
		return errors.Join(errs...)
	}
	params, err := resolveParams(step.Params, sd.Spec.Vars)
	if err != nil {
		return err // checked at submit
	}
	// Each task has its agent's time, within what is left of the loop's.
	timeout, end := sd.TaskTimeout(id), h.WaveStartedAt.Add(sd.Timeout(id))
	for _, i := range which {
		inputs, err := k.d.inputs(ctx, e, sd, id, items, i)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		task := schemas.TaskRequest{Inputs: inputs, Params: params, TimeoutMS: timeout.Milliseconds()}
		deadline := time.Now().Add(timeout)
		if deadline.After(end) {
			deadline = end
		}
		meta := dispatchMeta(sd, id, pipelinespec.LoopTaskID(sd.ID, id, i, sd.Nonce), deadline)
		if confirm {
			err = e.dispatch(ctx, step.Agent, task, meta, true)
			if errors.Is(err, bus.ErrBacklogFull) {
				// MESH_TASKS is at a limit: the item fails with it, as
				// an agent's failure would, rather than wait for the
				// loop's timeout.
				res := schemas.Failure(step.Agent, schemas.CodeBacklogFull, fmt.Sprintf("step %q (%s): %v", id, step.Agent, err), false)
				err = applyItemRecord(ctx, e, k, sd, h, id, i, resultRecord(sd, h, id, meta.TaskID, res, time.Now().UTC()))
			}
		} else {
			err = e.dispatch(ctx, step.Agent, task, meta, false)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// applyItem applies the result of one item of loop step id: the item's
// record, then the progress (which may start more items), then, when the
// loop is over, the step's record. A duplicate changes nothing but
// re-publishes the running items (their ids make that harmless), for a
// replica that died between the progress and the publish.
func applyItem(ctx context.Context, e env, sd *state.RunSpec, h *state.RunHeader, id, taskID string, res schemas.AgentResult) error {
	k, ok := loopOf(sd, id)
	i, isItem := pipelinespec.LoopItem(sd.ID, id, taskID, sd.Nonce)
	if !ok || !isItem {
		return nil
	}
	return applyItemRecord(ctx, e, k, sd, h, id, i, resultRecord(sd, h, id, taskID, res, time.Now().UTC()))
}

// applyItemRecord is applyItem for item i ended as rec says (an agent's
// result, or a child run's end).
func applyItemRecord(ctx context.Context, e env, k loopKind, sd *state.RunSpec, h *state.RunHeader, id string, i int, rec *state.StepState) error {
	rec, err := e.store().RecordItem(ctx, sd.ID, id, i, rec)
	if err != nil {
		return err
	}
	items, p, rev := e.loops().get(sd.ID, id)
	if items == nil {
		if items, err = e.store().LoopItems(ctx, sd.ID, id); err != nil {
			return err
		}
	}
	if p != nil && (i >= p.N || p.HasEnded(i)) {
		p = nil // maybe behind: decide on the stored one
	}
	if p == nil {
		if p, rev, err = e.store().LoopProgress(ctx, sd.ID, id); err != nil {
			return err
		}
		e.loops().put(sd.ID, id, items, p, rev)
	}
	if i >= p.N {
		return nil
	}
	stop, code, err := k.d.decide(ctx, e, sd, id, p, i, rec)
	if err != nil {
		return err
	}
	return endItems(ctx, e, k, sd, h, id, itemEnd{i: i, stop: stop, code: code})
}

// itemEnd is item i of a loop that ended, and why the loop stops because
// of it ("" to go on) with the code that fails the step.
type itemEnd struct {
	i          int
	stop, code string
}

// itemBatch is the ends of one loop's items waiting for one progress
// update (see endItems).
type itemBatch struct {
	ends []itemEnd
	done chan struct{} // closed once written (or failed: err)
	err  error
}

// endItems writes the ends of items of loop step id to its progress, which
// may start more items, and ends the loop when it is over. Ends of one loop
// that come in while an update is written gather into the next one, so the
// items of a loop share their progress writes instead of queueing one
// compare-and-set each.
func endItems(ctx context.Context, e env, k loopKind, sd *state.RunSpec, h *state.RunHeader, id string, end itemEnd) error {
	key := sd.ID + "\x00" + id
	lc := e.loops()
	lc.batchMu.Lock()
	if lc.batches == nil {
		lc.batches = map[string]*itemBatch{}
	}
	b := lc.batches[key]
	if b == nil {
		b = &itemBatch{done: make(chan struct{})}
		lc.batches[key] = b
	}
	b.ends = append(b.ends, end)
	lc.batchMu.Unlock()

	unlock := lc.locks.lock(key)
	lc.batchMu.Lock()
	mine := lc.batches[key] == b
	if mine {
		delete(lc.batches, key)
	}
	lc.batchMu.Unlock()
	if !mine {
		unlock()
		<-b.done
		return b.err
	}
	defer close(b.done)
	items, p, rev := e.loops().get(sd.ID, id)
	var started []int
	next, nrev, err := e.store().UpdateLoop(ctx, sd.ID, id, p, rev, func(p *state.LoopProgress) error {
		changed := false
		for _, end := range b.ends {
			if end.i >= p.N || !p.End(end.i) {
				continue
			}
			changed = true
			if p.Stop == "" {
				p.Stop, p.Code = end.stop, end.code
			}
		}
		if !changed {
			return state.ErrUnchanged
		}
		started = p.Fill()
		return nil
	})
	unlock()
	switch {
	case errors.Is(err, state.ErrUnchanged):
		started = next.Running()
	case err != nil:
		b.err = err
		return err
	default:
		e.loops().put(sd.ID, id, items, next, nrev)
		for _, end := range b.ends {
			emitLoopProgress(e, sd, h, id, next, end.i)
		}
	}
	if next.Over() || next.Stop != "" && len(next.Running()) == 0 {
		b.err = endLoop(ctx, e, k, sd, h, id, next)
		return b.err
	}
	if items == nil {
		if items, err = e.store().LoopItems(ctx, sd.ID, id); err != nil {
			b.err = err
			return err
		}
	}
	b.err = sendItems(ctx, e, k, sd, h, id, items, started, false)
	return b.err
}

// endLoop writes the record of a loop that is over and settles it.
func endLoop(ctx context.Context, e env, k loopKind, sd *state.RunSpec, h *state.RunHeader, id string, p *state.LoopProgress) error {
	rec, err := k.d.finish(ctx, e, sd, h, id, p)
	if err != nil {
		return err
	}
	e.loops().drop(sd.ID, id)
	_, err = e.end(ctx, sd, rec)
	return err
}

// sweepLoopStep looks at loop step id of the wave in progress, which has no
// record: a loop that is over but was not ended (its replica died) ends; a
// loop whose progress stood still for the republish interval has its
// running items published again, once per progress revision.
func sweepLoopStep(ctx context.Context, e env, sd *state.RunSpec, h *state.RunHeader, id string, now time.Time) {
	k, ok := loopOf(sd, id)
	if !ok {
		return
	}
	p, rev, err := e.store().LoopProgress(ctx, sd.ID, id)
	if err != nil {
		return // not started yet: the sweep's republish starts it
	}
	if p.Over() || p.Stop != "" && len(p.Running()) == 0 {
		if err := endLoop(ctx, e, k, sd, h, id, p); err != nil {
			e.config().log.WarnContext(runContext(sd), "ending loop", "step", id, "err", err)
		}
		return
	}
	if now.Sub(p.UpdatedAt) < e.config().republish || !e.loops().resend(sd.ID, id, rev) {
		return
	}
	items, err := e.store().LoopItems(ctx, sd.ID, id)
	if err == nil {
		err = sendItems(ctx, e, k, sd, h, id, items, p.Running(), true)
	}
	if err != nil {
		e.config().log.WarnContext(runContext(sd), "re-publishing loop items", "step", id, "err", err)
	}
}

// loopOf returns the loop kind of step id.
func loopOf(sd *state.RunSpec, id string) (loopKind, bool) {
	step, _ := sd.Step(id)
	k, ok := kinds[step.Kind].(loopKind)
	return k, ok
}

// dispatchMeta is the dispatch metadata of a task of step id.
func dispatchMeta(sd *state.RunSpec, id, taskID string, deadline time.Time) meshcore.DispatchMeta {
	step, _ := sd.Step(id)
	return meshcore.DispatchMeta{TaskID: taskID, RunID: sd.ID, StepID: id, Deadline: deadline, Owner: sd.Owner,
		TraceParent: telemetry.StepTraceParent(sd.TraceParent, sd.ID, id), Version: step.Version}
}

// emitLoopProgress tells watchers how a loop goes: for a repeat each
// iteration, for a for_each every tenth of its items.
func emitLoopProgress(e env, sd *state.RunSpec, h *state.RunHeader, id string, p *state.LoopProgress, i int) {
	step, _ := sd.Step(id)
	ended := p.Low + len(p.Ended)
	var why string
	switch {
	case step.Kind == pipelinespec.StepKindRepeat && p.Stop == "" && p.Next > i+1:
		why = fmt.Sprintf("iteration %d of at most %d: the condition did not hold after iteration %d", i+2, p.N, i+1)
	case step.Kind == pipelinespec.StepKindForEach && p.N > 0 && (ended*10/p.N != (ended-1)*10/p.N):
		why = fmt.Sprintf("%d of %d items ended, %d running", ended, p.N, len(p.Running()))
	default:
		return
	}
	e.emitStep(sd, schemas.StepEvent{RunID: sd.ID, Step: id, Agent: step.Agent, Status: schemas.StepRunning, Wave: h.Wave,
		Attempt: 1, TaskID: pipelinespec.LoopTaskID(sd.ID, id, i, sd.Nonce), Reason: why, At: time.Now().UTC()})
}

// loopCache keeps, per loop this replica touched, its items and the
// progress it last read or wrote, and the progress revision its sweep
// last re-published; and the ends of items waiting for a progress update
// (see endItems).
type loopCache struct {
	mu sync.Mutex
	m  map[string]*cachedLoop

	locks   keyedMutex // serialises this replica's progress updates of one loop
	batchMu sync.Mutex
	batches map[string]*itemBatch // per loop: item ends waiting for the progress update
}

type cachedLoop struct {
	items  *state.LoopItems
	p      *state.LoopProgress
	rev    uint64
	resent uint64
}

func (c *loopCache) get(run, id string) (*state.LoopItems, *state.LoopProgress, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.m[run+"\x00"+id]; l != nil {
		return l.items, l.p, l.rev
	}
	return nil, nil, 0
}

func (c *loopCache) put(run, id string, items *state.LoopItems, p *state.LoopProgress, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*cachedLoop{}
	}
	l := c.m[run+"\x00"+id]
	if l == nil {
		l = &cachedLoop{}
		c.m[run+"\x00"+id] = l
	}
	if l.p == nil || rev > l.rev {
		l.items, l.p, l.rev = items, p, rev
	}
}

// resend reports whether the items of progress revision rev were not
// re-published yet, and marks them so.
func (c *loopCache) resend(run, id string, rev uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*cachedLoop{}
	}
	l := c.m[run+"\x00"+id]
	if l == nil {
		l = &cachedLoop{}
		c.m[run+"\x00"+id] = l
	}
	if l.resent == rev {
		return false
	}
	l.resent = rev
	return true
}

func (c *loopCache) drop(run, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, run+"\x00"+id)
}
