package agents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// Limits of agent-to-agent calls (WithCallLimits).
const (
	// DefaultMaxCallDepth is how deep a chain of calls may go: a task sent
	// by a call of a task sent by a call ... at most this many calls deep.
	DefaultMaxCallDepth = 4
	// DefaultMaxCallFanout is how many calls one task may make.
	DefaultMaxCallFanout = 16
	// DefaultCallGrace is how long a call by name waits for its callee
	// to have a live instance (WithCallGrace), as the orchestrator waits
	// for an agent that never announced before it fails its task.
	DefaultCallGrace = 5 * time.Second
)

// maxCallMargin caps the time a callee's deadline keeps back from its
// caller's, so that the callee's own timeout reaches the caller before
// the caller's deadline and is reported as the callee's.
const maxCallMargin = time.Second

// slot is the concurrency slot a task of the durable path holds while it
// runs. A task that calls another agent gives it back while it waits
// (release), so that the callee, maybe this very agent, can run even when
// every slot was busy, and takes one again when the result is in
// (acquire). release also ends the task's hold for good.
type slot interface {
	release()
	acquire()
}

// semSlot is a slot of the consume loop's semaphore. acquire does not
// block: the task resumes at once and, when every slot is taken (the loop
// holds one while it waits for the next task), a goroutine waits for the
// next one on its behalf, beside the loop, so the instance is over its
// limit only until a slot frees. It is used by one goroutine at a time
// (caller serialises it).
type semSlot struct {
	sem     chan struct{}
	held    bool
	pending chan struct{} // closed to stop the goroutine acquire started
	waited  chan struct{} // closed when that goroutine ended
}

func newSemSlot(sem chan struct{}) *semSlot { return &semSlot{sem: sem, held: true} }

func (s *semSlot) release() {
	if s.pending != nil {
		close(s.pending)
		<-s.waited // after which held is the goroutine's word
		s.pending, s.waited = nil, nil
	}
	if s.held {
		<-s.sem
		s.held = false
	}
}

func (s *semSlot) acquire() {
	if s.pending != nil || s.held { // pending first: its goroutine may write held
		return
	}
	select {
	case s.sem <- struct{}{}:
		s.held = true
		return
	default:
	}
	s.pending, s.waited = make(chan struct{}), make(chan struct{})
	go func(stop, done chan struct{}) {
		defer close(done)
		select {
		case s.sem <- struct{}{}:
			s.held = true
		case <-stop:
		}
	}(s.pending, s.waited)
}

// noSlot is the slot of a direct call, which holds none.
type noSlot struct{}

func (noSlot) release() {}
func (noSlot) acquire() {}

// caller makes the agent-to-agent calls of one task (schemas.Caller): it
// publishes the callee's task on the durable path, mesh.task.<callee>,
// with replyto mesh.result.<callee>.agent.<caller>.<call id>, waits for
// the result without holding the task's slot, and adds what the callee
// used to what the caller reports.
type caller struct {
	r        *Runtime
	d        *delivery
	depth    int // this task's calldepth
	maxDepth int // the chain's maxcalldepth

	mu      sync.Mutex
	calls   int
	waiting int  // calls waiting for their result; the slot is back while > 0
	closed  bool // Execute returned: the slot is no longer the calls' to move
	used    schemas.Usage
}

// newCaller reads the call extensions of d's task: calldepth and
// maxcalldepth, whole numbers, the depth at most the limit.
func (r *Runtime) newCaller(d *delivery) (*caller, error) {
	c := &caller{r: r, d: d, maxDepth: r.cfg.maxCallDepth}
	for _, e := range []struct {
		name string
		into *int
	}{{bus.ExtCallDepth, &c.depth}, {bus.ExtMaxCallDepth, &c.maxDepth}} {
		v := d.event.Ext(e.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: extension %s %q is not a whole number >= 0", bus.ErrInvalidAttribute, e.name, v)
		}
		*e.into = n
	}
	if c.depth > c.maxDepth {
		return nil, &schemas.ResultError{Code: schemas.CodeCallDepth, Message: fmt.Sprintf(
			"task %s is %d calls deep, over its chain's limit of %d (maxcalldepth)", d.event.ID, c.depth, c.maxDepth)}
	}
	return c, nil
}

// Call implements schemas.Caller: limits, target, deadline, publish, wait
// without the slot, account.
func (c *caller) Call(ctx context.Context, target schemas.CallTarget, task schemas.TaskRequest) (schemas.AgentResult, error) {
	me := c.r.contract.Name
	refuse := func(code, format string, args ...any) (schemas.AgentResult, error) {
		res := schemas.Failure(me, code, fmt.Sprintf(format, args...), false)
		return res, res.Error
	}
	if c.depth+1 > c.maxDepth {
		return refuse(schemas.CodeCallDepth, "%s calling %s: task %s is %d calls deep and the chain's limit is %d (maxcalldepth): call directly, not through another agent, or raise the limit (WithCallLimits)",
			me, target, c.d.event.ID, c.depth, c.maxDepth)
	}
	c.mu.Lock()
	c.calls++
	n := c.calls
	c.mu.Unlock()
	if n > c.r.cfg.maxCallFanout {
		return refuse(schemas.CodeCallFanout, "%s calling %s: task %s made %d calls already, its limit (WithCallLimits): call fewer agents per task",
			me, target, c.d.event.ID, c.r.cfg.maxCallFanout)
	}
	// The call is a step of the task (schemas.Step): a redelivered task
	// gets the callee's recorded result and sends nothing. A failed call
	// records nothing; made again, its id (the task's and the call's
	// number, counted above whether replayed or not) finds the first
	// task in the stream's duplicate window and the first result.
	var (
		failed schemas.AgentResult
		called bool
	)
	res, err := schemas.Step(ctx, StepCall, func(ctx context.Context, key string) (schemas.AgentResult, error) {
		called = true
		res, err := c.call(ctx, target, task, callBase(c.d.event.ID, key, n))
		if err != nil {
			failed = res
		}
		return res, err
	})
	if err != nil {
		return failed, err
	}
	if !called { // what the callee used is still the caller's cost
		c.mu.Lock()
		c.used = c.used.Add(schemas.Usage{Tokens: res.Metrics.Tokens, Cost: res.Metrics.Cost, ModelMS: res.Metrics.ModelMS})
		c.mu.Unlock()
	}
	return res, nil
}

// StepCall is the step name of an agent-to-agent call made in a task: its
// journal key is <task>.call.<n> (docs/durability.md).
const StepCall = "call"

// call makes the task's call named base (callBase): target, deadline,
// publish, wait without the slot, account.
func (c *caller) call(ctx context.Context, target schemas.CallTarget, task schemas.TaskRequest, base string) (schemas.AgentResult, error) {
	me := c.r.contract.Name
	refuse := func(code, format string, args ...any) (schemas.AgentResult, error) {
		res := schemas.Failure(me, code, fmt.Sprintf(format, args...), false)
		return res, res.Error
	}
	callee, err := c.r.resolveTarget(ctx, target)
	if err != nil {
		return schemas.AgentResult{}, err
	}
	deadline, ok := calleeDeadline(ctx, task)
	if !ok {
		return refuse(schemas.CodeTimeout, "%s calling %s: no time left before the deadline", me, callee)
	}
	id := callID(base, c.d.raw.Header.Get(bus.HeaderSignature))
	replyTo := c.r.cfg.names.CallResult(callee, me, id)
	if err := c.publish(ctx, callee, id, replyTo, deadline, task); err != nil {
		return schemas.AgentResult{}, err
	}
	ReportProgress(ctx, "calling "+callee, 0)
	c.wait(+1)
	got, err := c.r.dispatcher.Await(ctx, replyTo, id)
	c.wait(-1)
	if err != nil {
		if ctx.Err() != nil {
			return refuse(schemas.CodeTimeout, "%s calling %s: no result of task %s before the caller's deadline", me, callee, id)
		}
		return schemas.AgentResult{}, fmt.Errorf("%s calling %s (task %s): %w", me, callee, id, err)
	}
	res := got.Result
	c.mu.Lock()
	c.used = c.used.Add(schemas.Usage{Tokens: res.Metrics.Tokens, Cost: res.Metrics.Cost, ModelMS: res.Metrics.ModelMS})
	c.mu.Unlock()
	if err := res.Err(); err != nil {
		return res, fmt.Errorf("%s calling %s (task %s): %w", me, callee, id, err)
	}
	return res, nil
}

// publish sends the callee's task: the caller's run, conversation and
// trace, one call deeper, the deadline given.
func (c *caller) publish(ctx context.Context, callee, id, replyTo string, deadline time.Time, task schemas.TaskRequest) error {
	ev := c.d.event
	meta := meshcore.DispatchMeta{TaskID: id, ReplyTo: replyTo, Deadline: deadline, TraceParent: telemetry.TraceParent(ctx),
		RunID: ev.Ext(bus.ExtRunID), ConversationID: ev.Ext(bus.ExtConversationID), Owner: ev.Ext(bus.ExtOwner)}
	if meta.TraceParent == "" {
		meta.TraceParent = ev.Ext(bus.ExtTraceParent)
	}
	out, err := c.r.dispatcher.Event(callee, task, &meta)
	if err != nil {
		return fmt.Errorf("%s calling %s: %w", c.r.contract.Name, callee, err)
	}
	out.DataContentType = bus.ContentTypeJSON
	out.SetExt(bus.ExtCallDepth, strconv.Itoa(c.depth+1))
	out.SetExt(bus.ExtMaxCallDepth, strconv.Itoa(c.maxDepth))
	subject, err := c.r.cfg.names.Task(callee)
	if err != nil {
		return err
	}
	msg, err := bus.Encode(subject, out)
	if err != nil {
		return err
	}
	// The id is the caller's task id and the call's number: a redelivered
	// caller calling again is stored once, and finds the first result.
	msg.Header.Set(jetstream.MsgIDHeader, id)
	if err := bus.SignTask(c.r.nc, msg); err != nil { // the callee answers this agent's signed calls only
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if _, err := bus.Publish(pctx, c.r.js, msg); err != nil {
		err = fmt.Errorf("%s calling %s: publishing task %s: %w", c.r.contract.Name, callee, id, err)
		if errors.Is(err, bus.ErrBacklogFull) {
			// MESH_TASKS is at a limit: a retry of the caller's task
			// would only add to it. The error carries backlog_full.
			return err
		}
		return Retryable(err)
	}
	return nil
}

// wait counts a call that starts (+1) or stops (-1) waiting: the first
// to start gives the task's slot back, the last to stop takes one again.
func (c *caller) wait(delta int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting += delta
	switch {
	case c.closed:
		// A call Execute left running: the task's slot is gone.
	case delta > 0 && c.waiting == 1:
		c.d.slot.release()
	case delta < 0 && c.waiting == 0:
		c.d.slot.acquire()
	}
}

// close ends the calls' hold on the task's slot: Execute returned.
func (c *caller) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

// usage is what the task's callees used, to add to its result.
func (c *caller) usage() schemas.Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// calleeDeadline is the caller's deadline less a margin (a tenth of the
// time left, at most maxCallMargin), or without one now plus the task's
// timeout_ms (schemas.DefaultTaskTimeout when 0). false: no time left.
func calleeDeadline(ctx context.Context, task schemas.TaskRequest) (time.Time, bool) {
	now := time.Now()
	dl, ok := ctx.Deadline()
	if !ok {
		t := time.Duration(task.TimeoutMS) * time.Millisecond
		if t <= 0 {
			t = schemas.DefaultTaskTimeout
		}
		return now.Add(t), true
	}
	left := dl.Sub(now)
	dl = dl.Add(-min(left/10, maxCallMargin))
	if task.TimeoutMS > 0 {
		if own := now.Add(time.Duration(task.TimeoutMS) * time.Millisecond); own.Before(dl) {
			dl = own
		}
	}
	return dl, dl.After(now)
}

// callBase names a call of task taskID by its step key (schemas.StepKey):
// <task>-c<k+1> for the key <task>.call.<k>, the task's (k+1)-th call, and
// for a call made inside a step the enclosing steps' names and numbers
// before it (<task>.fetch.0.call.0: <task>-fetch-0-c1). The key is the same
// on every delivery, whatever steps a delivery replays, so a call made
// again has its first id. Without a journal (key "") it is <task>-c<n>,
// the task's n-th call.
func callBase(taskID, key string, n int) string {
	rest, ok := strings.CutPrefix(key, taskID+".")
	parts := strings.Split(rest, ".")
	if !ok || len(parts) < 2 {
		return taskID + "-c" + strconv.Itoa(n)
	}
	k, err := strconv.Atoi(parts[len(parts)-1])
	if err != nil {
		return taskID + "-c" + strconv.Itoa(n)
	}
	id := taskID + "-"
	if outer := parts[:len(parts)-2]; len(outer) > 0 {
		id += strings.Join(outer, "-") + "-"
	}
	return id + "c" + strconv.Itoa(k+1)
}

// callID is the id of the call named base (callBase), or a digest
// of it when that is longer than an id may be. On a secure mesh key is
// the signature of the parent's task (bus.HeaderSignature), which only
// this agent reads: the id is then tagged with it (schemas.TaskTag), so
// no one who sees the parent's id in an event can send a task under the
// call's id first and have the call dropped as a duplicate. Redeliveries
// of the parent carry the same signature, and so make the same ids.
func callID(base, key string) string {
	id := schemas.TaskTag(base, key)
	if len(id) <= 128 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "call-" + hex.EncodeToString(sum[:16])
}

// resolveTarget names the agent of target: its name, or the live agent
// whose contract offers what it asks for (another agent before this one,
// then by name).
func (r *Runtime) resolveTarget(ctx context.Context, target schemas.CallTarget) (string, error) {
	if target.Agent != "" {
		if err := bus.ValidateAgentName(target.Agent); err != nil {
			return "", &schemas.ResultError{Code: schemas.CodeInvalidInput, Message: r.contract.Name + " calling " + target.String() + ": " + err.Error()}
		}
		return target.Agent, r.awaitLive(ctx, target.Agent)
	}
	if target.Capability == "" && target.Output == "" {
		return "", &schemas.ResultError{Code: schemas.CodeInvalidInput, Message: r.contract.Name + " calling " + target.String()}
	}
	kv, err := r.js.KeyValue(ctx, r.cfg.names.AgentsBucket())
	if err != nil {
		return "", Retryable(fmt.Errorf("%s calling %s: agents bucket: %w", r.contract.Name, target, err))
	}
	reg, err := meshcore.NewRegistry(ctx, kv)
	if err != nil {
		return "", Retryable(fmt.Errorf("%s calling %s: %w", r.contract.Name, target, err))
	}
	defer reg.Stop()
	var fits []string
	for _, a := range reg.Agents() {
		if target.Offers(a.Contract) {
			fits = append(fits, a.Contract.Name)
		}
	}
	if len(fits) == 0 {
		return "", &schemas.ResultError{Code: schemas.CodeUnavailable, Message: fmt.Sprintf(
			"%s calling %s: no live agent offers it; start one, or call an agent by name", r.contract.Name, target)}
	}
	slices.SortFunc(fits, func(a, b string) int {
		if (a == r.contract.Name) != (b == r.contract.Name) {
			if a == r.contract.Name {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	return fits[0], nil
}

// awaitLive returns once agent has a live instance (a key <agent>.<id> in
// the agents bucket), waiting at most the call grace for one that is
// starting; then it fails with code unknown_agent, naming the live agents.
// An agent seen live lately is not looked up again.
func (r *Runtime) awaitLive(ctx context.Context, agent string) error {
	if t, ok := r.seenLive.Load(agent); ok && time.Since(t.(time.Time)) < r.cfg.heartbeat {
		return nil
	}
	kv, err := r.js.KeyValue(ctx, r.cfg.names.AgentsBucket())
	if err != nil {
		return Retryable(fmt.Errorf("%s calling %s: agents bucket: %w", r.contract.Name, agent, err))
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := kv.Watch(wctx, agent+".*", jetstream.IgnoreDeletes())
	if err != nil {
		return Retryable(fmt.Errorf("%s calling %s: watching the agents bucket: %w", r.contract.Name, agent, err))
	}
	defer func() { _ = w.Stop() }()
	if firstPut(ctx, w, r.cfg.callGrace) {
		r.seenLive.Store(agent, time.Now())
		return nil
	}
	if ctx.Err() != nil {
		return &schemas.ResultError{Code: schemas.CodeTimeout, Message: fmt.Sprintf(
			"%s calling %s: the caller's deadline passed while waiting for a live instance of %s", r.contract.Name, agent, agent)}
	}
	return &schemas.ResultError{Code: schemas.CodeUnknownAgent, Message: fmt.Sprintf(
		"%s calling %s: no live instance of agent %q within %s (live agents: %s); check the name with 'agentmesh agents', or start the agent",
		r.contract.Name, agent, agent, r.cfg.callGrace, r.liveAgents(ctx))}
}

// firstPut reports whether w gives a key that is put: among its current
// keys, or within grace after them (ctx ending first: false).
func firstPut(ctx context.Context, w jetstream.KeyWatcher, grace time.Duration) bool {
	var timeout <-chan time.Time // from the end of the current keys
	for {
		select {
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return false
			case e == nil: // the current keys are read
				if grace <= 0 {
					return false
				}
				timer := time.NewTimer(grace)
				defer timer.Stop()
				timeout = timer.C
			case e.Operation() == jetstream.KeyValuePut:
				return true
			}
		case <-timeout:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// liveAgents names the agents with a live instance, sorted, for a message.
func (r *Runtime) liveAgents(ctx context.Context) string {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	kv, err := r.js.KeyValue(lctx, r.cfg.names.AgentsBucket())
	if err != nil {
		return "unknown"
	}
	keys, err := kv.ListKeys(lctx)
	if err != nil {
		return "unknown"
	}
	var names []string
	for k := range keys.Keys() {
		if name, _, ok := strings.Cut(k, "."); ok && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
