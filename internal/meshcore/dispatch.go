package meshcore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// DispatchMeta carries the envelope of a task: which run or conversation it
// belongs to, where its result goes, its deadline and trace context. Zero
// fields take defaults (see Dispatcher.Dispatch).
type DispatchMeta struct {
	TaskID         string    // the task event's id; default a fresh UUID
	RunID          string    // runid extension
	StepID         string    // stepid extension
	ConversationID string    // conversationid extension
	Owner          string    // owner extension: the client that owns the run or conversation; default the dispatcher's names' client (Names.ForClient)
	ReplyTo        string    // default mesh.result.<agent>.orchestrator.<run or conversation>, else mesh.result.<agent>.<task>
	Deadline       time.Time // default now + the task's timeout
	TraceParent    string    // W3C traceparent; default the span of Dispatch's ctx, else a new trace
	Version        string    // pins the task to this version of the agent (mesh.task.<agent>.v.<version>); "" any
}

// SetTraceParent puts the traceparent of ctx's span on ev when ev has none
// and ctx has one.
func SetTraceParent(ctx context.Context, ev *bus.Event) {
	if ev.Ext(bus.ExtTraceParent) != "" {
		return
	}
	if tp := telemetry.TraceParent(ctx); tp != "" {
		ev.SetExt(bus.ExtTraceParent, tp)
	}
}

// NewTraceParent returns a fresh W3C traceparent (version 00, sampled).
func NewTraceParent() string {
	return fmt.Sprintf("00-%016x%016x-%016x-01", rand.Uint64(), rand.Uint64(), nonZero())
}

// nonZero returns a random span id (W3C forbids all zeroes).
func nonZero() uint64 {
	for {
		if v := rand.Uint64(); v != 0 {
			return v
		}
	}
}

// Dispatcher publishes tasks to agents and waits for their results. It is
// safe for concurrent use.
type Dispatcher struct {
	js     jetstream.JetStream
	names  bus.Names
	source string
	log    *slog.Logger
}

// NewDispatcher returns a dispatcher publishing with js under names, with
// source as the CloudEvents source of its tasks (default
// "agentmesh/orchestrator").
func NewDispatcher(js jetstream.JetStream, names bus.Names, source string) *Dispatcher {
	if source == "" {
		source = "agentmesh/orchestrator"
	}
	return &Dispatcher{js: js, names: names, source: source, log: slog.New(slog.DiscardHandler)}
}

// WithLogger makes d log to l (at debug level, a task the stream already
// held) and returns d. Call it before d is used.
func (d *Dispatcher) WithLogger(l *slog.Logger) *Dispatcher {
	if l != nil {
		d.log = l
	}
	return d
}

// Dispatch publishes task to mesh.task.<agent> as io.agentmesh.task.requested
// with a JetStream publish whose Nats-Msg-Id is the task id, so a repeated
// dispatch of the same task id inside the stream's duplicate window is
// stored once. It sets the replyto, deadline (RFC 3339), traceparent and the
// runid/stepid/conversationid extensions, and returns the task id.
func (d *Dispatcher) Dispatch(ctx context.Context, agent string, task schemas.TaskRequest, meta DispatchMeta) (string, error) {
	if meta.TraceParent == "" {
		meta.TraceParent = telemetry.TraceParent(ctx) // the agent's span is a child of the caller's
	}
	msg, err := d.message(agent, task, &meta)
	if err != nil {
		return "", err
	}
	ack, err := bus.Publish(ctx, d.js, msg)
	if err != nil {
		return "", fmt.Errorf("dispatching task %s to %s: %w", meta.TaskID, agent, err)
	}
	if ack.Duplicate {
		// Which sequence the stream holds the task id under: what to
		// look for when a task published again is never answered.
		d.log.DebugContext(ctx, "task already stored", "task", meta.TaskID, "agent", agent, "stream", ack.Stream, "sequence", ack.Sequence)
	}
	return meta.TaskID, nil
}

// KeepDispatched publishes a task Dispatch published again at 2, 4, 8, 16
// and 32 s after the call, under the same task id (so within the tasks
// stream's duplicate window it is stored once), until stop is called or
// ctx ends; call it while awaiting the task's result. One publish is not
// enough through a network partition: a node back from one may answer a
// publish as the stream's leader it no longer is, and the task acknowledged
// is not kept. Failures are left to the caller's wait.
func (d *Dispatcher) KeepDispatched(ctx context.Context, agent string, task schemas.TaskRequest, meta DispatchMeta) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		for at := 2 * time.Second; at <= 32*time.Second; at *= 2 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(start.Add(at))):
			}
			pctx, pcancel := context.WithTimeout(ctx, at/2)
			_, _ = d.Dispatch(pctx, agent, task, meta)
			pcancel()
		}
	}()
	return func() { cancel(); <-done }
}

// Send publishes a task without asking for the stream's ack: JetStream
// stores it (and drops a second copy of the same task id within the
// duplicate window), but no reply crosses the network. The pipeline
// scheduler uses it on its fast path: its sweep publishes a task again,
// with Dispatch, when no result came, and reports what the stream said.
func (d *Dispatcher) Send(agent string, task schemas.TaskRequest, meta DispatchMeta) error {
	msg, err := d.message(agent, task, &meta)
	if err != nil {
		return err
	}
	if err := d.js.Conn().PublishMsg(msg); err != nil {
		return fmt.Errorf("dispatching task %s to %s: %w", meta.TaskID, agent, err)
	}
	return nil
}

func (d *Dispatcher) message(agent string, task schemas.TaskRequest, meta *DispatchMeta) (*nats.Msg, error) {
	subject, err := d.names.Task(agent)
	if meta.Version != "" {
		subject, err = d.names.TaskVersion(agent, meta.Version)
	}
	if err != nil {
		return nil, err
	}
	ev, err := d.Event(agent, task, meta)
	if err != nil {
		return nil, err
	}
	msg, err := bus.Encode(subject, ev)
	if err != nil {
		return nil, err
	}
	msg.Header.Set(jetstream.MsgIDHeader, ev.ID)
	// On a secure mesh the task says who sends it: the agent answers
	// only into that identity's result subjects.
	if err := bus.SignTask(d.js.Conn(), msg); err != nil {
		return nil, err
	}
	return msg, nil
}

// Event builds the task event Dispatch would publish to agent, filling the
// defaults of meta in place. A replyto must lie under
// mesh.result.<agent>. (Names.AgentResults): agents refuse any other.
func (d *Dispatcher) Event(agent string, task schemas.TaskRequest, meta *DispatchMeta) (bus.Event, error) {
	ev, err := bus.NewEvent(bus.TypeTaskRequested, d.source, task)
	if err != nil {
		return ev, err
	}
	if meta.TaskID == "" {
		meta.TaskID = ev.ID
	}
	if err := bus.ValidateToken("task id", meta.TaskID); err != nil {
		return ev, err
	}
	ev.ID = meta.TaskID
	if meta.ReplyTo == "" {
		switch {
		case meta.RunID != "":
			meta.ReplyTo = d.names.OrchestratorResult(agent, meta.RunID)
		case meta.ConversationID != "":
			meta.ReplyTo = d.names.OrchestratorResult(agent, meta.ConversationID)
		default:
			meta.ReplyTo = d.names.Result(agent, meta.TaskID)
		}
	}
	if meta.Deadline.IsZero() {
		timeout := time.Duration(task.TimeoutMS) * time.Millisecond
		if timeout <= 0 {
			timeout = schemas.DefaultTaskTimeout
		}
		meta.Deadline = time.Now().Add(timeout)
	}
	if meta.TraceParent == "" {
		meta.TraceParent = NewTraceParent()
	}
	ev.SetExt(bus.ExtReplyTo, meta.ReplyTo)
	ev.SetExt(bus.ExtDeadline, meta.Deadline.UTC().Format(time.RFC3339Nano))
	ev.SetExt(bus.ExtTraceParent, meta.TraceParent)
	ev.SetExt(bus.ExtRunID, meta.RunID)
	ev.SetExt(bus.ExtStepID, meta.StepID)
	ev.SetExt(bus.ExtConversationID, meta.ConversationID)
	if meta.Owner == "" {
		meta.Owner = d.names.Client() // a client's direct call is its own
	}
	ev.SetExt(bus.ExtOwner, meta.Owner)
	return ev, nil
}

// Result is one task result read from MESH_RESULTS.
type Result struct {
	Event  bus.Event
	Result schemas.AgentResult
}

// Await waits for the result of taskID on the subject replyTo (the
// DispatchMeta.ReplyTo the task was sent with) and returns it. It reads
// MESH_RESULTS from the start of that subject, so a result that arrived
// before Await was called is found too. It returns when ctx ends, or at
// once with an *UndecodableResultError when a result of the task cannot be
// decoded.
//
// While the cluster cannot answer (bus.Transient: a node left and
// JetStream elects new leaders, the connection moves node), Await reads
// the subject again once it can, for as long as ctx lives: the task is
// out and its result will come.
func (d *Dispatcher) Await(ctx context.Context, replyTo, taskID string) (Result, error) {
	if strings.HasSuffix(replyTo, "."+taskID) {
		// The subject is the task's own: look up what the stream holds
		// on it now and then too, besides reading it through an ordered
		// consumer. In the partition test a tool call's result was
		// stored as the cut node came back, yet the wait's consumer never
		// delivered it and the chat turn waited out its timeout.
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stored := make(chan Result, 1)
		go d.lookStored(sctx, replyTo, taskID, stored)
		type read struct {
			res Result
			err error
		}
		readc := make(chan read, 1)
		go func() {
			res, err := d.awaitConsumer(sctx, replyTo, taskID)
			readc <- read{res, err}
		}()
		select {
		case res := <-stored:
			cancel()
			<-readc
			d.log.InfoContext(ctx, "result found stored, not delivered by the wait's consumer", "task", taskID, "subject", replyTo)
			return res, nil
		case r := <-readc:
			if r.err != nil && ctx.Err() == nil {
				select { // a result found as the read failed still counts
				case res := <-stored:
					return res, nil
				default:
				}
			}
			return r.res, r.err
		}
	}
	return d.awaitConsumer(ctx, replyTo, taskID)
}

// storedLooks are when Await looks up a task's result on its own subject,
// after the call; then every 32 s until the wait ends.
var storedLooks = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second}

// lookStored looks up the last message the results stream holds on
// replyTo, a subject of taskID's own, at storedLooks, and sends the first
// that decodes as taskID's result on found.
func (d *Dispatcher) lookStored(ctx context.Context, replyTo, taskID string, found chan<- Result) {
	start := time.Now()
	for i := 0; ; i++ {
		at := storedLooks[min(i, len(storedLooks)-1)]
		if i >= len(storedLooks) {
			at = storedLooks[len(storedLooks)-1] * time.Duration(i-len(storedLooks)+2)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(start.Add(at))):
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s, err := d.js.Stream(lctx, d.names.ResultsStream())
		var m *jetstream.RawStreamMsg
		if err == nil {
			m, err = s.GetLastMsgForSubject(lctx, replyTo)
		}
		cancel()
		if err != nil {
			continue // not stored yet, or no answer: the next look
		}
		ev, err := bus.Decode(&nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data})
		if err != nil || ev.Ext(bus.ExtTaskID) != taskID {
			continue // left to the consumer's read, which reports it
		}
		var res schemas.AgentResult
		if ev.DataAs(&res) != nil {
			continue
		}
		found <- Result{Event: ev, Result: res}
		return
	}
}

// awaitConsumer is Await through ordered consumers of replyTo alone.
func (d *Dispatcher) awaitConsumer(ctx context.Context, replyTo, taskID string) (Result, error) {
	res, err := bus.Retry(ctx, awaitTransient, nil, func() (Result, error) { return d.await(ctx, replyTo, taskID) })
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return res, fmt.Errorf("awaiting task %s on %s: %w (%v)", taskID, replyTo, ctx.Err(), err)
	}
	return res, err
}

// awaitTransient bounds how long Await reads again while the cluster
// cannot answer: as long as its ctx lives.
const awaitTransient = 365 * 24 * time.Hour

// awaitResets bounds how often one ordered consumer of Await is made again
// when its consumer is lost (heartbeats stop, the consumer is deleted).
// nats.go's default tries for ever, inside the iterator's Next and with no
// regard for ctx: a consumer that cannot be made again (the node it was on
// cut off, the cluster not placing the new one) held a chat turn's tool
// call past its deadline for good, so the turn never ended. Bounded, the
// failure comes back to Await, which makes a new consumer while ctx lives.
const awaitResets = 2

// await is one read of replyTo for taskID's result, through one ordered
// consumer.
func (d *Dispatcher) await(ctx context.Context, replyTo, taskID string) (Result, error) {
	cons, err := d.js.OrderedConsumer(ctx, d.names.ResultsStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{replyTo}, InactiveThreshold: orderedInactive, MaxResetAttempts: awaitResets,
	})
	if err != nil {
		return Result{}, fmt.Errorf("awaiting task %s: %w", taskID, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return Result{}, fmt.Errorf("awaiting task %s: %w", taskID, err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return Result{}, fmt.Errorf("awaiting task %s on %s: %w", taskID, replyTo, ctx.Err())
			}
			if errors.Is(err, jetstream.ErrOrderedConsumerReset) {
				continue
			}
			return Result{}, fmt.Errorf("awaiting task %s: %w", taskID, err)
		}
		ev, err := bus.DecodeJS(msg)
		// Everything on a subject ending in the task id
		// (mesh.result.<agent>.<task>) is that task's; elsewhere a result
		// is the task's when its taskid says so.
		ours := strings.HasSuffix(replyTo, "."+taskID) || ev.Ext(bus.ExtTaskID) == taskID
		if err != nil {
			if ours {
				return Result{Event: ev}, &UndecodableResultError{TaskID: taskID, Msg: msg, Err: err}
			}
			continue
		}
		if ev.Ext(bus.ExtTaskID) != taskID {
			continue
		}
		var res schemas.AgentResult
		if err := ev.DataAs(&res); err != nil {
			return Result{Event: ev}, &UndecodableResultError{TaskID: taskID, Msg: msg, Err: err}
		}
		return Result{Event: ev, Result: res}, nil
	}
}

// UndecodableResultError is Await's error for a result of the awaited task
// that could not be decoded (its event or its data). It matches
// ErrUndecodableResult and the decode error (bus.ErrInvalidAttribute, say).
type UndecodableResultError struct {
	TaskID string
	Msg    jetstream.Msg // the message as received, for DeadLetter
	Err    error         // the decode error
}

func (e *UndecodableResultError) Error() string {
	return fmt.Sprintf("the result of task %s could not be decoded: %v", e.TaskID, e.Err)
}

func (e *UndecodableResultError) Unwrap() []error { return []error{ErrUndecodableResult, e.Err} }

// DeadLetter publishes m, a message taken from a stream, to
// mesh.dead.<agent> (see bus.DeadLetter) with reason; its Nats-Msg-Id names
// the stream and sequence it came from, so handling m twice stores one dead
// letter.
func (d *Dispatcher) DeadLetter(ctx context.Context, agent string, m jetstream.Msg, reason string) error {
	subject, err := d.names.Dead(agent)
	if err != nil {
		return err
	}
	dead := bus.DeadLetterOf(subject, m, agent, schemas.CodeMalformedResult, reason)
	if _, err := bus.Publish(ctx, d.js, dead); err != nil {
		return fmt.Errorf("dead-lettering to %s: %w", subject, err)
	}
	return nil
}
