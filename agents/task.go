package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// Headers the runtime adds to a dead-lettered task (see bus.DeadLetter).
const (
	HeaderDeadReason     = bus.HeaderDeadReason
	HeaderDeadAgent      = bus.HeaderDeadAgent
	HeaderDeadInstance   = bus.HeaderDeadInstance
	HeaderDeadDeliveries = bus.HeaderDeadDeliveries
)

// publishTimeout bounds a JetStream publish of a result or dead letter.
// Those publishes are detached from the task's context on purpose: they
// tell the task's outcome, timeout and cancel included, after that context
// has ended.
const publishTimeout = 10 * time.Second

// delivery is one task message being handled.
type delivery struct {
	msg     jetstream.Msg
	raw     *nats.Msg
	event   bus.Event
	attempt int
	start   time.Time
	ctx     context.Context // the task's span and log ids (startTask)
	span    trace.Span
	slot    slot    // the concurrency slot it holds (call.go)
	shadow  bool    // a shadow copy (shadow.go)
	caller  *caller // its agent-to-agent calls, once it runs
}

// handle runs one task message to its end: a published result and an ack,
// a delayed nak for a retry, or a dead letter.
func (r *Runtime) handle(msg jetstream.Msg, s slot) {
	d := &delivery{
		msg:     msg,
		slot:    s,
		raw:     &nats.Msg{Subject: msg.Subject(), Header: msg.Headers(), Data: msg.Data()},
		attempt: 1,
		start:   time.Now(),
	}
	if meta, err := msg.Metadata(); err == nil {
		d.attempt = int(meta.NumDelivered)
	}
	if err := r.accept(d); err != nil {
		if r.isShadow(d) {
			r.endShadow(d, schemas.Failure(r.contract.Name, schemas.CodeMalformedEvent, oneLine(err), false))
			return
		}
		r.rejectMalformed(d, err)
		return
	}
	if r.isShadow(d) {
		if err := r.shadowOf(d); err != nil {
			r.endShadow(d, schemas.Failure(r.contract.Name, schemas.CodeForbidden, oneLine(err), false))
			return
		}
	}
	if refuseOn, err := r.checkSender(d); err != nil {
		r.refuseSender(d, refuseOn, err)
		return
	}
	taskID := doneKey(d.event)
	if r.done.has(taskID) {
		_ = msg.Ack() // answered already; the redelivery only needs its ack
		r.finished(d, schemas.OutcomeDuplicate, schemas.AgentResult{Success: true})
		return
	}
	res, retry := r.run(d)
	if retry != nil {
		if d.attempt < r.cfg.maxDeliver {
			delay := r.cfg.backoff[min(d.attempt-1, len(r.cfg.backoff)-1)]
			r.log.InfoContext(d.ctx, "task will be retried", "attempt", d.attempt, "delay", delay, "err", retry)
			_ = msg.NakWithDelay(delay)
			r.finished(d, schemas.OutcomeRetry, schemas.Failure(r.contract.Name, "", retry.Error(), true))
			return
		}
		reason := fmt.Sprintf("gave up after %d deliveries: %v", d.attempt, retry)
		if err := r.deadLetter(d, schemas.CodeExhausted, reason); err != nil {
			r.log.ErrorContext(d.ctx, "dead-lettering task", "err", err)
		}
		res = schemas.Failure(r.contract.Name, schemas.CodeExhausted, reason, false)
		if r.finish(d, res) {
			r.finished(d, schemas.OutcomeDeadLetter, res)
		}
		return
	}
	if r.finish(d, res) {
		outcome := schemas.OutcomeCompleted
		if !res.Success {
			outcome = schemas.OutcomeFailed
		}
		r.finished(d, outcome, res)
	}
}

// accept decodes the task event of d into d.event, reports it received,
// and checks what every task event must be, on either path: of type
// io.agentmesh.task.requested, an id usable as a subject token, and a
// replyto (when given) a result can be published to.
func (r *Runtime) accept(d *delivery) error {
	ev, err := bus.Decode(d.raw)
	d.event = ev
	r.startTask(d)
	r.observe(d.ctx, schemas.TaskReceived{TaskRef: r.taskRef(d), Delivery: d.attempt, At: d.start})
	if err != nil {
		return err
	}
	if ev.Type != bus.TypeTaskRequested {
		return fmt.Errorf("%w: event type %q on %s: a task is %s", bus.ErrInvalidAttribute, ev.Type, d.raw.Subject, bus.TypeTaskRequested)
	}
	if err := bus.ValidateToken("task id (the event id)", ev.ID); err != nil {
		return err
	}
	if rt := ev.Ext(bus.ExtReplyTo); rt != "" && !r.validReplyTo(rt) {
		return fmt.Errorf("%w: replyto %q is not one of this agent's result subjects: name a subject under %s> (or none, for %s)",
			bus.ErrInvalidAttribute, rt, r.resultPrefix, r.cfg.names.Result(r.contract.Name, "<taskid>"))
	}
	if owner := ev.Ext(bus.ExtOwner); owner != "" {
		if err := bus.ValidateToken("owner extension (a client name)", owner); err != nil {
			return err
		}
	}
	return nil
}

// run validates and executes the task. It returns the result, or a non-nil
// retry error when the failure should be retried. It is long because the
// checks a task passes before it runs come in one order, each answering
// with its own code, and the outcome of Execute maps to one result.
func (r *Runtime) run(d *delivery) (schemas.AgentResult, error) {
	ev, c := d.event, r.contract
	fail := func(code, format string, args ...any) (schemas.AgentResult, error) {
		return schemas.Failure(c.Name, code, fmt.Sprintf(format, args...), false), nil
	}
	var req schemas.TaskRequest
	if len(ev.Data) > 0 {
		if err := bus.DecodeData(ev, &req, schemas.ValidateTask); err != nil {
			return fail(schemas.CodeMalformedEvent, "task %s: %v", ev.ID, err)
		}
	}
	if err := validateInputs(c, r.cfg.registry, req.Inputs); err != nil {
		return fail(schemas.CodeInvalidInput, "task %s for %s: %s", ev.ID, c.Name, oneLine(err))
	}
	if err := r.params.check(req.Params); err != nil {
		given, _ := json.Marshal(req.Params)
		return fail(schemas.CodeInvalidParams, "task %s for %s: params %s: %s", ev.ID, c.Name, schemas.Clip(string(given), 200), oneLine(err))
	}
	deadline, hasDeadline, err := ev.Deadline()
	if err != nil {
		return fail(schemas.CodeMalformedEvent, "task %s: %v", ev.ID, err)
	}
	budget := ""
	switch {
	case hasDeadline:
		budget = "deadline " + deadline.UTC().Format(time.RFC3339Nano)
	case req.TimeoutMS > 0:
		deadline, hasDeadline = d.start.Add(time.Duration(req.TimeoutMS)*time.Millisecond), true
		budget = "the task's timeout_ms " + strconv.FormatInt(req.TimeoutMS, 10)
	case c.TimeoutMS > 0:
		deadline, hasDeadline = d.start.Add(time.Duration(c.TimeoutMS)*time.Millisecond), true
		budget = "the contract's timeout_ms " + strconv.FormatInt(c.TimeoutMS, 10)
	}
	if hasDeadline && !time.Now().Before(deadline) {
		return fail(schemas.CodeTimeout, "task %s for %s was past its %s before it started", ev.ID, c.Name, budget)
	}
	for name, v := range req.Inputs {
		if err := r.checkCollection(name, v); err != nil {
			return fail(schemas.CodeLimitExceeded, "task %s for %s: %v", ev.ID, c.Name, err)
		}
	}
	// The task's context bounds all of its work from here on: reading its
	// inputs from the object store, the agent, spilling its outputs.
	ctx, cancel := context.WithCancelCause(d.ctx)
	defer cancel(nil)
	// Its files go to, and are read from, its owner's bucket first
	// (resolvers.WithOwnerBuckets).
	ctx = schemas.WithOwner(ctx, ev.Ext(bus.ExtOwner))
	if hasDeadline {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadlineCause(ctx, deadline, ErrDeadline)
		defer stop()
	}
	r.mu.Lock()
	r.running[ev.ID] = cancel
	if _, asked := r.early[ev.ID]; asked {
		// Its cancel request came while it waited to start.
		delete(r.early, ev.ID)
		cancel(ErrCancelled)
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.running, ev.ID)
		r.mu.Unlock()
	}()
	// stopped is the failure of a task whose deadline passed or that was
	// cancelled by request, whatever it was doing then.
	stopped := func() (schemas.AgentResult, bool) {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, ErrDeadline):
			return schemas.Failure(c.Name, schemas.CodeTimeout, fmt.Sprintf("task %s for %s did not finish within %s", ev.ID, c.Name, budget), false), true
		case errors.Is(cause, ErrCancelled):
			return schemas.Failure(c.Name, schemas.CodeCancelled, fmt.Sprintf("task %s for %s was cancelled by request", ev.ID, c.Name), false), true
		}
		return schemas.AgentResult{}, false
	}
	if r.cfg.resolver != nil {
		for name, v := range req.Inputs {
			rv, err := r.cfg.resolver.ResolveValue(ctx, v)
			if res, ok := stopped(); err != nil && ok {
				return res, nil
			}
			if err != nil {
				if IsRetryable(err) {
					return schemas.AgentResult{}, err
				}
				code := schemas.CodeNotFound
				if errors.Is(err, schemas.ErrInvalidValue) || errors.Is(err, resolvers.ErrInvalidID) {
					code = schemas.CodeInvalidInput // a reference that is malformed, not missing
				}
				return fail(code, "task %s: resolving input %q (%s): %v", ev.ID, name, v.DataType, err)
			}
			req.Inputs[name] = rv
		}
	}

	if d.caller, err = r.newCaller(d); err != nil {
		code := schemas.CodeMalformedEvent
		if re, ok := errors.AsType[*schemas.ResultError](err); ok {
			code = re.Code
		}
		return fail(code, "task %s: %v", ev.ID, err)
	}
	if !d.shadow { // a shadow copy reports no progress nor text (shadow.go)
		ctx = withScope(ctx, &taskScope{rt: r, taskID: ev.ID, events: r.progressSubject(ev), ext: correlation(ev), delta: r.deltaOf(ev)})
	}
	if ev.ID != "" && !r.cfg.noJournal && !d.shadow {
		// The task's steps are journaled (journal.go): a redelivery finds
		// what the steps of earlier deliveries recorded.
		ctx = schemas.WithSteps(ctx, ev.ID, &journal{r: r, taskID: ev.ID, first: d.attempt <= 1})
	}
	switch {
	case req.Budget != nil && req.BudgetKey != "":
		if err := schemas.ValidBudgetKey(req.BudgetKey); err != nil {
			return fail(schemas.CodeInvalidRequest, "task %s: %v", ev.ID, err)
		}
		ctx = schemas.WithSharedTaskBudget(ctx, "task "+ev.ID, req.BudgetKey, *req.Budget) // with the other steps of its wave
	case req.Budget != nil:
		ctx = schemas.WithTaskBudget(ctx, ev.ID, *req.Budget) // the agent's model calls stop at what is left of the run's
	}

	stopProgress := r.keepInProgress(d.msg)
	r.observe(d.ctx, schemas.TaskStarted{TaskRef: r.taskRef(d), Delivery: d.attempt, At: time.Now()})
	ec := schemas.ContextFromTask(r.cfg.registry, req)
	ec.SetCaller(d.caller)
	res, err := r.execute(ctx, ec)
	d.caller.close()
	stopProgress()

	if res, ok := stopped(); ok {
		return res, nil
	}
	switch {
	case err != nil && IsRetryable(err):
		return schemas.AgentResult{}, err
	case err != nil:
		// A callee's failure keeps its code: a timeout at the bottom of a
		// chain of calls is a timeout at the top.
		return fail(schemas.CodeOr(err, schemas.CodeAgentError), "%s: %v", c.Name, err)
	case !res.Success && res.Error != nil && res.Error.Retryable:
		return schemas.AgentResult{}, res.Error
	case !res.Success:
		if res.Error == nil {
			res.Error = &schemas.ResultError{Code: schemas.CodeAgentError, Message: c.Name + " failed without saying why"}
		}
		return res, nil
	}
	if err := validateOutputs(c, r.cfg.registry, res.Outputs); err != nil {
		return fail(schemas.CodeAgentError, "%s produced bad outputs: %s", c.Name, oneLine(err))
	}
	if r.cfg.resolver != nil {
		for name, v := range res.Outputs {
			sv, err := r.cfg.resolver.SpillValue(ctx, v)
			if res, ok := stopped(); err != nil && ok {
				return res, nil
			}
			if err != nil {
				return schemas.AgentResult{}, Retryable(fmt.Errorf("spilling output %q: %w", name, err))
			}
			res.Outputs[name] = sv
		}
	}
	return res, nil
}

// execute calls the agent, turning a panic into an error.
func (r *Runtime) execute(ctx context.Context, ec *schemas.ExecutionContext) (res schemas.AgentResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.ErrorContext(ctx, "Execute panicked", "panic", p)
			err = fmt.Errorf("panic in Execute: %v", p)
		}
	}()
	return r.agent.Execute(ctx, ec)
}

// keepInProgress tells the server every AckWait/3 that the task is still
// being worked on, until the returned func is called. A direct call (no
// stream message) has nothing to keep.
func (r *Runtime) keepInProgress(msg jetstream.Msg) func() {
	if msg == nil {
		return func() {}
	}
	// A timer rather than a goroutine and a ticker: most tasks end long
	// before the first tick, and this costs them one timer.
	every := r.cfg.ackWait / 3
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			_ = msg.InProgress()
			t.Reset(every)
		}
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// finish fills in the result's bookkeeping, publishes it and acks the task.
// When the result cannot be published the task is redelivered later and
// finish reports false.
func (r *Runtime) finish(d *delivery, res schemas.AgentResult) bool {
	r.stamp(d, &res)
	if err := r.publishResult(d.event, res); err != nil {
		r.log.ErrorContext(d.ctx, "publishing result", "err", err)
		if d.attempt >= r.cfg.maxDeliver {
			r.giveUpPublishing(d, err)
			return false
		}
		_ = d.msg.NakWithDelay(r.cfg.backoff[0])
		r.finished(d, schemas.OutcomeRetry, schemas.Failure(r.contract.Name, "", "publishing the result: "+err.Error(), true))
		return false
	}
	if d.event.ID != "" {
		r.done.add(doneKey(d.event))
	}
	if err := d.msg.Ack(); err != nil {
		r.log.WarnContext(d.ctx, "acking task", "err", err)
	}
	return true
}

// giveUpPublishing ends the last delivery of a task whose result could
// not be published: the task is dead-lettered with the reason, a short
// retries_exhausted result is published in its stead, and the task is
// terminated, so that it is not left unanswered in the stream.
func (r *Runtime) giveUpPublishing(d *delivery, cause error) {
	reason := fmt.Sprintf("gave up after %d deliveries: publishing the result failed: %s", d.attempt, schemas.Clip(oneLine(cause), 1000))
	if err := r.deadLetter(d, schemas.CodeExhausted, reason); err != nil {
		r.log.ErrorContext(d.ctx, "dead-lettering task", "err", err)
	}
	res := schemas.Failure(r.contract.Name, schemas.CodeExhausted, reason, false)
	r.stamp(d, &res)
	if err := r.publishResult(d.event, res); err != nil {
		r.log.ErrorContext(d.ctx, "publishing the retries_exhausted result", "err", err)
	} else if d.event.ID != "" {
		r.done.add(d.event.ID)
	}
	_ = d.msg.TermWithReason("result not published")
	r.finished(d, schemas.OutcomeDeadLetter, res)
}

// stamp fills in the result's bookkeeping: agent, capability, duration
// from receipt, attempt.
func (r *Runtime) stamp(d *delivery, res *schemas.AgentResult) {
	res.Agent = r.contract.Name
	res.Version = r.contract.Version
	res.Shadow = d.shadow
	if res.Capability == "" {
		res.Capability = r.contract.Capability
	}
	res.Metrics.DurationMS = time.Since(d.start).Milliseconds()
	res.Metrics.Attempt = d.attempt
	if d.caller != nil { // what its callees used is the caller's cost too
		u := d.caller.usage()
		res.Metrics.Tokens = res.Metrics.Tokens.Add(u.Tokens)
		res.Metrics.Cost += u.Cost
		res.Metrics.ModelMS += u.ModelMS
	}
}

// observe hands o to the runtime's observer with the task's context (its
// span and log ids).
func (r *Runtime) observe(ctx context.Context, o schemas.Observation) { r.cfg.observer.Observe(ctx, o) }

// finished reports the end of a delivery with outcome (schemas.Outcome*).
func (r *Runtime) finished(d *delivery, outcome string, res schemas.AgentResult) {
	f := schemas.TaskFinished{TaskRef: r.taskRef(d), Outcome: outcome, Duration: time.Since(d.start), Metrics: res.Metrics}
	if res.Error != nil {
		f.Code, f.Error = res.Error.Code, res.Error.Message
	}
	r.observe(d.ctx, f)
	endTask(d, f)
}

// taskRef names the task of d as its event's extension attributes say.
func (r *Runtime) taskRef(d *delivery) schemas.TaskRef {
	ev := d.event
	return schemas.TaskRef{Agent: r.contract.Name, TaskID: ev.ID, RunID: ev.Ext(bus.ExtRunID), StepID: ev.Ext(bus.ExtStepID),
		ConversationID: ev.Ext(bus.ExtConversationID), TraceParent: ev.Ext(bus.ExtTraceParent), Direct: d.msg == nil}
}

// publishResult sends the result event to the task's replyto, else to
// mesh.result.<agent>.<taskid>, with a JetStream publish and a Nats-Msg-Id
// of result-<taskid> (resultMsgID), so a second result of the same task is
// dropped. A
// replyto outside mesh.result.<agent>.> is never used: an agent publishes
// only where results of its own tasks go, so a task cannot make it write
// into a KV key or another agent's results (a confused deputy).
func (r *Runtime) publishResult(task bus.Event, res schemas.AgentResult) error {
	subject := task.Ext(bus.ExtReplyTo)
	if !r.validReplyTo(subject) {
		subject = r.cfg.names.Result(r.contract.Name, task.ID)
	}
	msg, _, err := r.resultMessage(subject, task, res)
	if err != nil {
		return err
	}
	if task.ID != "" {
		msg.Header.Set(jetstream.MsgIDHeader, r.resultMsgID(task.ID, subject))
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	_, err = bus.Publish(ctx, r.js, msg)
	return err
}

// resultMessage is the result event of task, task.completed or
// task.failed, addressed to subject: binary mode, or structured when a
// value cannot be a header. A result too large for a message is cut to
// one that fits and says so (boundResult); the result sent is returned.
func (r *Runtime) resultMessage(subject string, task bus.Event, res schemas.AgentResult) (*nats.Msg, schemas.AgentResult, error) {
	limit := r.maxResultBytes()
	msg, err := r.encodeResult(subject, task, res)
	for keep := true; err == nil && msgSize(msg) > limit; keep = false {
		size := msgSize(msg)
		r.log.Warn("result too large to publish: cut", "task", task.ID, "bytes", size, "limit", limit)
		res = boundResult(res, size, limit, keep)
		if msg, err = r.encodeResult(subject, task, res); err != nil || !keep {
			break
		}
	}
	return msg, res, err
}

// encodeResult is the message of resultMessage, whatever its size.
func (r *Runtime) encodeResult(subject string, task bus.Event, res schemas.AgentResult) (*nats.Msg, error) {
	typ := bus.TypeTaskCompleted
	if !res.Success {
		typ = bus.TypeTaskFailed
	}
	ev, err := bus.NewEvent(typ, r.source, res)
	if err != nil {
		return nil, err
	}
	ev.DataContentType = bus.ContentTypeJSON
	for k, v := range correlation(task) {
		ev.SetExt(k, v)
	}
	ev.SetExt(bus.ExtTaskID, task.ID)
	msg, err := bus.Encode(subject, ev)
	if err != nil {
		return bus.EncodeStructured(subject, ev)
	}
	return msg, nil
}

// rejectMalformed answers a task event that could not be read: with a
// .failed result where a reply subject is known (its replyto when it is
// one of the agent's result subjects, else mesh.result.<agent>.<id> when it
// has a usable id), otherwise by dead-lettering the
// message with the reason. Either way the message is terminated.
func (r *Runtime) rejectMalformed(d *delivery, cause error) {
	reason := oneLine(cause)
	r.log.WarnContext(d.ctx, "malformed task", "subject", d.raw.Subject, "err", reason)
	ev := d.event
	replyTo := ev.Ext(bus.ExtReplyTo)
	if !r.validReplyTo(replyTo) {
		replyTo = ""
	}
	idOK := ev.ID != "" && bus.ValidateToken("task id", ev.ID) == nil
	if to, known := r.senderReply(d, replyTo); !known {
		replyTo, idOK = "", false // nowhere its sender may be answered
	} else if to != replyTo {
		replyTo = to
		ev.SetExt(bus.ExtReplyTo, to)
	}
	if replyTo != "" || idOK {
		if !idOK {
			ev.ID = ""
		}
		if replyTo == "" {
			ev.SetExt(bus.ExtReplyTo, "")
		}
		res := schemas.Failure(r.contract.Name, schemas.CodeMalformedEvent, "task event on "+d.raw.Subject+": "+reason, false)
		res.Agent, res.Capability = r.contract.Name, r.contract.Capability
		res.Metrics.Attempt = d.attempt
		err := r.publishResult(ev, res)
		if err == nil {
			_ = d.msg.TermWithReason("malformed event")
			r.finished(d, schemas.OutcomeFailed, res)
			return
		}
		r.log.ErrorContext(d.ctx, "answering malformed task", "err", err)
	}
	if err := r.refuseUnanswered(d, schemas.CodeMalformedEvent, "malformed event: "+reason); err != nil {
		r.log.ErrorContext(d.ctx, "dead-lettering malformed task", "err", err)
		_ = d.msg.NakWithDelay(r.cfg.backoff[0])
		r.finished(d, schemas.OutcomeRetry, schemas.Failure(r.contract.Name, schemas.CodeMalformedEvent, reason, true))
		return
	}
	_ = d.msg.TermWithReason("malformed event")
	r.finished(d, schemas.OutcomeDeadLetter, schemas.Failure(r.contract.Name, schemas.CodeMalformedEvent, reason, false))
}

// deadLetter publishes the task message, headers and body, to
// mesh.dead.<agent> with the code and reason in headers and, for a task
// taken from MESH_TASKS, the stream sequence it was stored at: a sender
// whose task has no id to answer on finds its refusal by that sequence.
func (r *Runtime) deadLetter(d *delivery, code, reason string) error {
	_, err := r.publishDead(d, code, reason)
	return err
}

// publishDead publishes the dead letter of d (see deadLetter) and returns
// it.
func (r *Runtime) publishDead(d *delivery, code, reason string) (*nats.Msg, error) {
	m := bus.DeadLetter(r.deadSubj, d.raw, r.contract.Name, reason)
	if d.msg != nil {
		m = bus.DeadLetterOf(r.deadSubj, d.msg, r.contract.Name, code, reason)
	}
	m.Header.Set(HeaderDeadInstance, r.cfg.instanceID)
	m.Header.Set(HeaderDeadDeliveries, strconv.Itoa(d.attempt))
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	_, err := bus.Publish(ctx, r.js, m)
	return m, err
}

// refuseUnanswered dead-letters a task refused with code that can be
// answered on no result subject (no usable id, or, on a secure mesh, a
// sender that cannot be told). On a secure mesh, where only the
// orchestrator and admin read mesh.dead.<agent>, it also posts the
// refusal's notice (bus.RefusalNotice) on mesh.dead.<agent>.refused,
// which every identity may read: the sender finds it by its task id or by
// the sequence its publish was acknowledged with.
func (r *Runtime) refuseUnanswered(d *delivery, code, reason string) error {
	dead, err := r.publishDead(d, code, reason)
	if err != nil || bus.CredentialsOf(r.nc) == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	if _, err := bus.Publish(ctx, r.js, bus.RefusalNotice(r.refusedSubj, dead, d.event.ID)); err != nil {
		return fmt.Errorf("posting the refusal on %s: %w", r.refusedSubj, err)
	}
	return nil
}

// progressSubject is mesh.events.<conversation|run|task>.task, or
// mesh.events.<conversation|run|task>.task.<owner> for a task whose owner
// extension names the client that owns its conversation or run (the only
// client that may read it on a secure mesh).
func (r *Runtime) progressSubject(ev bus.Event) string {
	names := r.cfg.names.ForClient(ev.Ext(bus.ExtOwner))
	for _, ext := range []string{bus.ExtConversationID, bus.ExtRunID} {
		if id := ev.Ext(ext); id != "" && bus.ValidateToken(ext, id) == nil {
			return names.Events(id, "task")
		}
	}
	return names.Events(ev.ID, "task")
}

// correlation returns the extensions a result copies from its task.
func correlation(ev bus.Event) map[string]string {
	out := map[string]string{}
	for _, k := range []string{bus.ExtConversationID, bus.ExtRunID, bus.ExtStepID, bus.ExtTraceParent} {
		if v := ev.Ext(k); v != "" {
			out[k] = v
		}
	}
	return out
}

// validReplyTo reports whether s is a subject this agent may answer on: one
// under mesh.result.<agent>. that can be published to.
func (r *Runtime) validReplyTo(s string) bool {
	return strings.HasPrefix(s, r.resultPrefix) && len(s) > len(r.resultPrefix) && validSubject(s)
}

// validSubject reports whether s can be published to: non-empty tokens, no
// wildcards, no whitespace.
func validSubject(s string) bool {
	if s == "" {
		return false
	}
	for tok := range strings.SplitSeq(s, ".") {
		if tok == "" || tok == "*" || tok == ">" {
			return false
		}
	}
	return !strings.ContainsAny(s, " \t\r\n")
}

// oneLine joins a multi-line error into one line.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
