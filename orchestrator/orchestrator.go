package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/pipeline"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// DurableName is the durable consumer all orchestrator replicas share, on
// MESH_RESULTS (filtered on mesh.result.*.orchestrator.>) and on MESH_REQUESTS.
const DurableName = "orchestrator"

// Orchestrator is one stateless replica: it takes chat requests and
// pipeline submissions from MESH_REQUESTS and results from MESH_RESULTS,
// each through a durable consumer shared by all replicas, and hands them to
// the chat loop and the pipeline scheduler. Every fact lives in KV. Any
// number of replicas may run; killing one loses nothing.
type Orchestrator struct {
	cfg        config
	nc         *nats.Conn
	js         jetstream.JetStream
	names      bus.Names
	store      *state.Store
	router     *route.Router
	dispatcher *meshcore.Dispatcher
	registry   *meshcore.Registry
	ownsReg    bool
	pipelines  *pipeline.Scheduler
	chat       *chat.Chat // nil without WithChat
	log        *slog.Logger
	// admit holds one token per submission being taken in: decoding and
	// checking a spec is CPU work whose memory grows with the spec, so
	// taking in more at once than there are CPUs only adds memory.
	admit chan struct{}
}

// New returns a replica on nc. The mesh must be provisioned (bus.Provision).
// Its options, each documented where it is defined:
//   - names and identity: WithNames, WithSource;
//   - the chat loop: WithChat (without it chat requests are refused);
//   - what runs steps: WithRegistry, WithRouter, WithCollections, WithModel,
//     WithPipelinesDir, WithLimits;
//   - how it consumes: WithWorkers, WithAckWait, WithMaxDeliver,
//     WithSweepInterval, WithTimeoutGrace, WithOrphanGrace;
//   - state and reporting: WithStateOptions, WithObserver, WithLogger.
func New(nc *nats.Conn, opts ...Option) (*Orchestrator, error) {
	cfg := config{workers: 32, sweep: time.Second, grace: time.Second, republish: 2 * time.Second,
		source: "agentmesh/orchestrator", ackWait: 5 * time.Second, maxPending: 10000, orphanGrace: DefaultOrphanGrace,
		maxDeliver: DefaultMaxDeliver}
	for _, o := range opts {
		o(&cfg)
	}
	if !cfg.namesSet {
		cfg.names = bus.MustNames(bus.DefaultPrefix)
	}
	if cfg.maxDeliver <= 0 {
		cfg.maxDeliver = DefaultMaxDeliver
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.logger = telemetry.Logger(cfg.logger)
	cfg.observer = schemas.Observers(telemetry.Observer{}, cfg.observer)
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: jetstream: %w", err)
	}
	// Pipelined KV writes get their own handle: its async publish timeout
	// bounds a write whose acknowledgement is lost.
	kvjs, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("orchestrator: jetstream: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bind := func(bucket string) (jetstream.KeyValue, error) {
		kv, err := js.KeyValue(ctx, bucket)
		if err != nil {
			return nil, fmt.Errorf("orchestrator: KV bucket %s: %w (provision the mesh first: agentmesh up, or bus.Provision)", bucket, err)
		}
		return kv, nil
	}
	convs, err := bind(cfg.names.ConversationsBucket())
	if err != nil {
		return nil, err
	}
	runs, err := bind(cfg.names.RunsBucket())
	if err != nil {
		return nil, err
	}
	if cfg.values == nil {
		obs, err := js.ObjectStore(ctx, cfg.names.FilesStore())
		if err != nil {
			return nil, fmt.Errorf("orchestrator: object store %s: %w (provision the mesh first)", cfg.names.FilesStore(), err)
		}
		cfg.values = resolvers.NewCollections(obs, 0)
	}
	if cfg.router == nil {
		cfg.router = route.NewRouter(route.WithValueResolver(cfg.values))
	}
	o := &Orchestrator{cfg: cfg, nc: nc, js: js, names: cfg.names, router: cfg.router, admit: make(chan struct{}, runtime.GOMAXPROCS(0)),
		store:      state.New(convs, runs, append([]state.Option{state.WithPipelining(kvjs), state.WithLeaderReads(js)}, cfg.stateOpts...)...),
		dispatcher: meshcore.NewDispatcher(js, cfg.names, cfg.source).WithLogger(cfg.logger), registry: cfg.registry, log: cfg.logger}
	if o.registry == nil {
		agentsKV, err := bind(cfg.names.AgentsBucket())
		if err != nil {
			return nil, err
		}
		if o.registry, err = meshcore.NewRegistry(ctx, agentsKV, meshcore.OnRefused(func(ref meshcore.Refusal) { go o.announceRefusal(ref) })); err != nil {
			return nil, err
		}
		o.ownsReg = true
	}
	if o.pipelines, err = pipeline.New(nc, pipeline.WithNames(cfg.names), pipeline.WithStore(o.store), pipeline.WithRouter(o.router),
		pipeline.WithDispatcher(o.dispatcher), pipeline.WithLookup(o.Lookup),
		pipeline.WithSweep(cfg.sweep), pipeline.WithGrace(cfg.grace), pipeline.WithRepublish(cfg.republish), pipeline.WithAckWait(cfg.ackWait),
		pipeline.WithSource(cfg.source), pipeline.WithLogger(cfg.logger), pipeline.WithObserver(cfg.observer), pipeline.WithModel(cfg.model),
		pipeline.WithPipelines(pipelinesIn(cfg.pipelines)), pipeline.WithLimits(cfg.limits)); err != nil {
		if o.ownsReg {
			o.registry.Stop()
		}
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	if cfg.chatOn {
		copts := append([]chat.Option{chat.WithNames(cfg.names), chat.WithStore(o.store), chat.WithRegistry(o.registry),
			chat.WithRouter(o.router), chat.WithDispatcher(o.dispatcher), chat.WithObserver(cfg.observer)}, cfg.chat...)
		if o.chat, err = chat.New(js, copts...); err != nil {
			if o.ownsReg {
				o.registry.Stop()
			}
			return nil, fmt.Errorf("orchestrator: chat: %w", err)
		}
	}
	return o, nil
}

// Store returns the state store.
func (o *Orchestrator) Store() *state.Store { return o.store }

// Registry returns the live registry view.
func (o *Orchestrator) Registry() *meshcore.Registry { return o.registry }

// Lookup returns the contract of a live agent; it is the ContractLookup
// pipelines are validated with.
func (o *Orchestrator) Lookup(agent string) (schemas.AgentContract, bool) {
	info, ok := o.registry.Lookup(agent)
	if !ok || len(info.Instances) == 0 {
		return schemas.AgentContract{}, false
	}
	return info.Contract, true
}

// Ready is the line a replica prints once it consumes.
func (o *Orchestrator) Ready() string {
	return fmt.Sprintf("orchestrator ready: consuming %s and %s as durable %q", o.names.RequestsStream(), o.names.OrchestratorResults(), DurableName)
}

// Run consumes requests and results until ctx ends, then stops taking new
// messages, finishes the ones in hand and returns nil. ready, when not nil,
// is called once the consumers are in place.
func (o *Orchestrator) Run(ctx context.Context) error { return o.RunReady(ctx, nil) }

// RunReady is Run calling ready once the consumers are in place. A ctx
// that ends while the consumers are being set up is a shutdown too: nil.
func (o *Orchestrator) RunReady(ctx context.Context, ready func()) error {
	err := o.serve(ctx, ready)
	if err != nil && ctx.Err() != nil {
		o.log.Debug("orchestrator stopped while starting", "err", err)
		return nil
	}
	return err
}

func (o *Orchestrator) serve(ctx context.Context, ready func()) error {
	if o.ownsReg {
		defer o.registry.Stop()
	}
	results, err := o.consumer(ctx, o.names.ResultsStream(), jetstream.ConsumerConfig{
		Durable: DurableName, FilterSubject: o.names.OrchestratorResults(), AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: o.cfg.ackWait, MaxAckPending: o.cfg.maxPending, DeliverPolicy: jetstream.DeliverAllPolicy,
		MaxDeliver:  ResultsMaxDeliver,
		Description: "orchestrator replicas: results of tasks they dispatched",
	})
	if err != nil {
		return fmt.Errorf("orchestrator: results consumer: %w", err)
	}
	requests, err := o.consumer(ctx, o.names.RequestsStream(), jetstream.ConsumerConfig{
		Durable: DurableName, AckPolicy: jetstream.AckExplicitPolicy, AckWait: o.cfg.ackWait, MaxDeliver: o.cfg.maxDeliver,
		MaxAckPending: o.cfg.maxPending, Description: "orchestrator replicas: chat requests and pipeline submissions",
	})
	if err != nil {
		return fmt.Errorf("orchestrator: requests consumer: %w", err)
	}
	ticks, err := o.schedulesConsumer(ctx)
	if err != nil {
		return fmt.Errorf("orchestrator: schedules consumer: %w", err)
	}
	sweepDone, err := o.pipelines.StartSweep(ctx)
	if err != nil {
		return err
	}
	orphansDone := o.runOrphans(ctx)

	work := make(chan func(), o.cfg.workers)
	var wg sync.WaitGroup
	for range o.cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				f()
			}
		}()
	}
	// Handlers run with a context that outlives ctx a little, so a message
	// in hand is finished during shutdown.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	var inflight sync.WaitGroup
	submit := func(f func(jetstream.Msg)) jetstream.MessageHandler {
		return func(m jetstream.Msg) {
			inflight.Add(1)
			work <- func() { defer inflight.Done(); f(m) }
		}
	}
	rc, err := results.Consume(submit(func(m jetstream.Msg) { o.handleResult(hctx, m) }))
	if err != nil {
		return fmt.Errorf("orchestrator: consuming results: %w", err)
	}
	// A submission can be a large spec: buffer a few beyond the workers
	// (the default 500 would hold hundreds of them in memory at once).
	qc, err := requests.Consume(submit(func(m jetstream.Msg) { o.handleRequest(hctx, m) }), jetstream.PullMaxMessages(requestsBuffered))
	if err != nil {
		rc.Stop()
		return fmt.Errorf("orchestrator: consuming requests: %w", err)
	}
	var tc jetstream.ConsumeContext
	if ticks != nil {
		if tc, err = ticks.Consume(submit(func(m jetstream.Msg) { o.handleTick(hctx, m) }), jetstream.PullMaxMessages(requestsBuffered)); err != nil {
			rc.Stop()
			qc.Stop()
			return fmt.Errorf("orchestrator: consuming schedule ticks: %w", err)
		}
	}
	o.log.Info("orchestrator ready")
	if ready != nil {
		ready()
	}
	<-ctx.Done()
	rc.Drain()
	qc.Drain()
	if tc != nil {
		tc.Drain()
		<-tc.Closed()
	}
	<-rc.Closed()
	<-qc.Closed()
	<-sweepDone
	<-orphansDone
	inflight.Wait()
	close(work)
	wg.Wait()
	return nil
}

// requestsBuffered is how many requests a replica holds beyond the ones
// its workers have in hand.
const requestsBuffered = 16

// handleRequest takes one message from MESH_REQUESTS. Every request ends
// with one answer its sender can read (see docs/errors.md): the chat loop's
// or the pipeline's own, a refusal from rejectRequest, or, for a request
// none of whose ids can name a subject, a dead letter on
// mesh.dead.orchestrator.
func (o *Orchestrator) handleRequest(ctx context.Context, m jetstream.Msg) {
	ev, err := bus.DecodeJS(m)
	if err != nil {
		o.log.Warn("malformed request", "subject", m.Subject(), "err", err)
		o.settleRefusal(m, o.rejectRequest(ctx, m.Subject(), ev, schemas.CodeMalformedEvent, fmt.Errorf("malformed request: %w", err)))
		return
	}
	ctx = telemetry.WithTraceParent(ctx, ev.Ext(bus.ExtTraceParent))
	// The client a request came from is the one its subject names: on a
	// secure mesh only that client may publish there (docs/security.md).
	plain, requester := o.names.SplitRequest(m.Subject())
	ctx = bus.WithRequester(ctx, requester)
	want := bus.TypeChatRequested
	switch plain {
	case o.names.PipelineSubmit():
		want = bus.TypePipelineSubmitted
	case o.names.PipelineResolve():
		want = bus.TypeResolveRequested
	}
	if ev.Type == bus.TypeForkRequested && plain == o.names.PipelineSubmit() {
		want = ev.Type // a fork is a submission too
	}
	if ev.Type != want {
		o.settleRefusal(m, o.rejectRequest(ctx, m.Subject(), ev, schemas.CodeMalformedEvent,
			fmt.Errorf("unexpected event type %q on %s; send %s there", ev.Type, m.Subject(), want)))
		return
	}
	switch ev.Type {
	case bus.TypePipelineSubmitted, bus.TypeForkRequested:
		stop := keepAlive(m, o.cfg.ackWait/3)
		o.admit <- struct{}{}
		submit := o.pipelines.Submit
		if ev.Type == bus.TypeForkRequested {
			submit = o.pipelines.Fork
		}
		err := submit(ctx, ev)
		<-o.admit
		stop()
		if errors.Is(err, bus.ErrNoReplySubject) {
			o.settleRefusal(m, err)
			return
		}
		if err != nil {
			o.log.WarnContext(ctx, "pipeline submission", "id", ev.ID, "run", firstNonEmpty(ev.Ext(bus.ExtRunID), ev.ID), "err", err)
			o.retryRequest(ctx, m, ev, err)
			return
		}
	case bus.TypeResolveRequested:
		err := o.pipelines.Resolve(ctx, ev)
		if errors.Is(err, bus.ErrNoReplySubject) {
			o.settleRefusal(m, err)
			return
		}
		if err != nil {
			o.log.WarnContext(ctx, "resolution", "id", ev.ID, "err", err)
			o.retryRequest(ctx, m, ev, err)
			return
		}
	case bus.TypeChatRequested:
		if o.chat == nil {
			o.settleRefusal(m, o.rejectRequest(ctx, m.Subject(), ev, schemas.CodeUnavailable,
				fmt.Errorf("%w: start it with an LLM or the offline planner", ErrNoChat)))
			return
		}
		stop := keepAlive(m, o.cfg.ackWait/3)
		_, err := o.chat.HandleEvent(ctx, ev)
		stop()
		if errors.Is(err, bus.ErrNoReplySubject) {
			o.settleRefusal(m, err)
			return
		}
		if err != nil {
			o.log.WarnContext(ctx, "chat request", "id", ev.ID, "conversation", ev.Ext(bus.ExtConversationID), "err", err)
		}
		if errors.Is(err, chat.ErrUnanswered) {
			o.retryRequest(ctx, m, ev, err)
			return
		}
	}
	_ = m.Ack()
}

// settleRefusal ends a refused request: answered (err nil), it is
// terminated; with nowhere to answer, it is dead-lettered first, with its
// code and the stream sequence it was stored at (bus.DeadLetterOf).
func (o *Orchestrator) settleRefusal(m jetstream.Msg, err error) {
	if err != nil {
		o.log.Warn("refused request with nowhere to answer: dead-lettered", "subject", m.Subject(), "err", err)
		subject, _ := o.names.Dead(DurableName)
		dl := bus.DeadLetterOf(subject, m, DurableName, refusalCode(err), err.Error())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, perr := o.js.PublishMsg(ctx, dl); perr != nil {
			o.log.Warn("dead letter", "err", perr)
			_ = m.NakWithDelay(time.Second)
			return
		}
	}
	_ = m.TermWithReason("refused")
}

// DefaultMaxDeliver is how many times a request on MESH_REQUESTS is
// delivered before the orchestrator gives up on it (WithMaxDeliver);
// ResultsMaxDeliver the same for a result on MESH_RESULTS, which an early
// result may need many of (each a short wait for the header of its wave).
const (
	DefaultMaxDeliver = 10
	ResultsMaxDeliver = 100
)

// notFoundDeliveries is how many times a result for a run this replica
// does not find is delivered (about two minutes, with delays growing to
// 5 s) before it is dropped: long enough for a replica's server back from
// a partition to catch up.
const notFoundDeliveries = 30

// maxAnswer bounds the error text of the answer to a request given up on.
const maxAnswer = 4000

// retryRequest ends a delivery of a request whose handling failed with
// err: it is delivered again after a delay growing with its deliveries;
// the last delivery (MaxDeliver) instead answers it with code internal on
// its sender's subject, dead-letters it on mesh.dead.orchestrator with
// the reason, and terminates it, so a request that cannot be served (or
// whose outcome cannot be written) ends once rather than coming back
// forever.
func (o *Orchestrator) retryRequest(ctx context.Context, m jetstream.Msg, ev bus.Event, err error) {
	if !lastDelivery(m, o.cfg.maxDeliver) {
		n := 1
		if md, merr := m.Metadata(); merr == nil {
			n = int(md.NumDelivered)
		}
		_ = m.NakWithDelay(min(time.Duration(n)*time.Second, 10*time.Second))
		return
	}
	reason := fmt.Sprintf("%s: gave up after %d deliveries: %s", schemas.CodeInternal, o.cfg.maxDeliver, schemas.Clip(err.Error(), maxAnswer))
	o.log.ErrorContext(ctx, "request given up on: answered and dead-lettered", "subject", m.Subject(), "id", ev.ID, "err", err)
	if aerr := o.rejectRequest(ctx, m.Subject(), ev, schemas.CodeInternal, errors.New(reason)); aerr != nil {
		o.log.WarnContext(ctx, "answering a request given up on", "err", aerr)
	}
	o.deadLetter(ctx, m, DurableName, reason)
	_ = m.TermWithReason("gave up")
}

// lastDelivery reports whether m is the last delivery of at most max.
func lastDelivery(m jetstream.Msg, max int) bool {
	md, err := m.Metadata()
	return err == nil && max > 0 && int(md.NumDelivered) >= max
}

// deadLetter publishes m to mesh.dead.<agent> with reason, and without
// its body when the whole does not fit in a message; it logs what fails.
func (o *Orchestrator) deadLetter(ctx context.Context, m jetstream.Msg, agent, reason string) {
	if err := o.dispatcher.DeadLetter(ctx, agent, m, reason); err == nil {
		return
	}
	subject, err := o.names.Dead(agent)
	if err != nil {
		subject, _ = o.names.Dead(DurableName)
	}
	dl := bus.DeadLetter(subject, &nats.Msg{Subject: m.Subject(), Header: m.Headers()}, agent,
		fmt.Sprintf("%s (its body of %d bytes is left out: it does not fit in a dead letter)", reason, len(m.Data())))
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := o.js.PublishMsg(pctx, dl); err != nil {
		o.log.Warn("dead letter", "subject", subject, "err", err)
	}
}

// consumer creates or binds the durable consumer cfg on stream, trying
// again while the server cannot answer (a cluster electing a leader, or
// busy creating the consumer's replicas) for up to two minutes.
func (o *Orchestrator) consumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	return bus.Retry(ctx, 2*time.Minute, func(err error) {
		o.log.Warn("orchestrator: the server did not answer creating a consumer; trying again", "stream", stream, "err", err)
	}, func() (jetstream.Consumer, error) {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		return o.js.CreateOrUpdateConsumer(cctx, stream, cfg)
	})
}

// keepAlive tells JetStream a long handler is still working.
func keepAlive(m jetstream.Msg, every time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = m.InProgress()
			}
		}
	}()
	return func() { close(done) }
}

// rejectRequest answers a request that cannot be served with a failed
// final event carrying code, touching no state: chat.responded on
// mesh.events.<conversation>.chat, pipeline.completed on
// mesh.events.<run>.pipeline, or, when that id cannot be a subject token, on
// the event id's subject; a client's request (on its own subject) is
// answered on the subjects of that client (Names.ForClient), the only ones
// it reads on a secure mesh. It returns an error wrapping
// bus.ErrNoReplySubject when no id can be.
func (o *Orchestrator) rejectRequest(ctx context.Context, subject string, ev bus.Event, code string, cause error) error {
	subject, requester := o.names.SplitRequest(subject)
	ctx = bus.WithRequester(ctx, requester)
	if o.names.ScheduleOfTick(subject) != "" {
		subject = o.names.PipelineSubmit() // a schedule's tick is a submission
	}
	if subject == o.names.PipelineResolve() {
		return o.pipelines.RefuseResolve(ctx, ev, code, cause)
	}
	if subject != o.names.PipelineSubmit() {
		var req schemas.ChatRequest
		_ = ev.DataAs(&req)
		conv := firstNonEmpty(req.ConversationID, ev.Ext(bus.ExtConversationID), ev.ID)
		to := bus.ReplyToken(conv, ev.ID)
		if to == "" {
			return fmt.Errorf("%w: %w", bus.ErrNoReplySubject, codedCause(code, cause))
		}
		// Stored, not only sent: a core publish is dropped while the events
		// stream elects a leader. The turn's message id: a request whose
		// turn was answered meanwhile keeps that answer.
		msg, err := bus.EventMsg(o.names.ForClient(requester).Events(to, "chat"), bus.TypeChatResponded, o.cfg.source, schemas.ChatResponse{
			ConversationID: to, State: schemas.ChatFailed, Output: "The chat request was refused: " + cause.Error(),
			Error: cause.Error(), Code: code}, func(e *bus.Event) {
			e.SetExt(bus.ExtConversationID, to)
		})
		if err == nil {
			if ev.ID != "" {
				msg.Header.Set(jetstream.MsgIDHeader, "chat-"+ev.ID)
			}
			_, err = bus.Publish(ctx, o.js, msg)
		}
		if err != nil {
			o.log.Warn("event", "type", bus.TypeChatResponded, "err", err)
		}
		return nil
	}
	return o.pipelines.Reject(ctx, codedCause(code, cause), firstNonEmpty(ev.Ext(bus.ExtRunID), ev.ID), ev.ID)
}

// refusalCode is the code of a refusal with nowhere to answer: the one its
// cause carries, invalid_id for an id that cannot be a subject token, else
// malformed_event.
func refusalCode(err error) string {
	if re, ok := errors.AsType[*schemas.ResultError](err); ok && re.Code != "" {
		return re.Code
	}
	if errors.Is(err, bus.ErrInvalidName) {
		return schemas.CodeInvalidID
	}
	return schemas.CodeMalformedEvent
}

// codedCause gives a refusal's cause its code (a schemas.ResultError is
// what the pipeline's Reject reads the code from).
func codedCause(code string, cause error) error {
	return &schemas.ResultError{Code: code, Message: cause.Error()}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// handleResult takes one result from MESH_RESULTS.
func (o *Orchestrator) handleResult(ctx context.Context, m jetstream.Msg) {
	ev, err := bus.DecodeJS(m)
	var res schemas.AgentResult
	if err == nil {
		err = bus.DecodeData(ev, &res, nil)
	}
	if err != nil {
		o.undecodableResult(ctx, m, ev, err)
		return
	}
	taskID := ev.Ext(bus.ExtTaskID)
	ctx = telemetry.WithLogAttrs(telemetry.WithTraceParent(ctx, ev.Ext(bus.ExtTraceParent)), "task", taskID, "run", ev.Ext(bus.ExtRunID))
	if ev.Ext(bus.ExtRunID) == "" {
		// Only pipeline steps reply here; chat tool calls reply on
		// mesh.result.<agent>.<task> to the replica running the turn.
		o.log.WarnContext(ctx, "result without a runid on the orchestrator's subject: not a pipeline step's, dropped", "subject", m.Subject(), "task", taskID)
		_ = m.Term()
		return
	}
	err = o.pipelines.ApplyResultFrom(ctx, o.names.ResultAgent(m.Subject()), ev.Ext(bus.ExtRunID), ev.Ext(bus.ExtStepID), taskID, res)
	if errors.Is(err, pipeline.ErrWrongAgent) {
		o.log.Warn("result dropped", "subject", m.Subject(), "task", taskID, "err", err)
		_ = m.TermWithReason("wrong agent")
		return
	}
	if errors.Is(err, pipeline.ErrEarly) {
		o.log.DebugContext(ctx, "result ahead of its wave: handled again shortly", "err", err)
		_ = m.NakWithDelay(100 * time.Millisecond)
		return
	}
	if errors.Is(err, state.ErrNotFound) {
		// No such run, as this replica reads the runs bucket. A task goes
		// out only once its run is stored, so either the run was removed
		// (max age) or the read was answered by a replica that lags: a
		// KV read may be served by any replica, and one back from a
		// partition catches up for a while. Acknowledged at once, the
		// result of a run created during the partition was lost on the
		// replica there, and the run waited out its step's timeout.
		if lastDelivery(m, notFoundDeliveries) {
			o.log.WarnContext(ctx, "result for a run that does not exist: dropped", "subject", m.Subject(), "deliveries", notFoundDeliveries, "err", err)
			_ = m.TermWithReason("unknown run")
			return
		}
		n := uint64(1)
		if md, merr := m.Metadata(); merr == nil {
			n = md.NumDelivered
		}
		_ = m.NakWithDelay(min(time.Duration(n)*time.Second, 5*time.Second))
		return
	}
	if err != nil {
		o.log.WarnContext(ctx, "applying result", "err", err)
		if lastDelivery(m, ResultsMaxDeliver) {
			// Its step times out, as for a result that never came.
			o.deadLetter(ctx, m, o.names.ResultAgent(m.Subject()), fmt.Sprintf("%s: the result could not be applied in %d deliveries: %v", schemas.CodeInternal, ResultsMaxDeliver, err))
			_ = m.TermWithReason("gave up")
			return
		}
		_ = m.NakWithDelay(500 * time.Millisecond)
		return
	}
	_ = m.Ack()
}

// undecodableResult handles a result whose event or data could not be
// decoded. When it names a step of a run (its runid or else the run of its
// subject, its stepid or else its taskid), that step fails at once with the
// decode error; the message goes to mesh.dead.<the step's agent>, or
// mesh.dead.orchestrator when no step is named, and is terminated.
func (o *Orchestrator) undecodableResult(ctx context.Context, m jetstream.Msg, ev bus.Event, cause error) {
	from := o.names.ResultAgent(m.Subject())
	runID := ev.Ext(bus.ExtRunID)
	if runID == "" {
		runID = strings.TrimPrefix(m.Subject(), o.names.OrchestratorResult(from, ""))
	}
	taskID := ev.Ext(bus.ExtTaskID)
	agent, err := o.pipelines.FailUndecodable(ctx, from, runID, ev.Ext(bus.ExtStepID), taskID, cause)
	if errors.Is(err, pipeline.ErrWrongAgent) {
		o.log.Warn("undecodable result dropped", "subject", m.Subject(), "err", err)
		_ = m.TermWithReason("wrong agent")
		return
	}
	if errors.Is(err, pipeline.ErrEarly) {
		_ = m.NakWithDelay(100 * time.Millisecond)
		return
	}
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		o.log.Warn("failing the step of an undecodable result", "subject", m.Subject(), "err", err)
		_ = m.NakWithDelay(500 * time.Millisecond)
		return
	}
	o.log.Warn("undecodable result", "subject", m.Subject(), "run", runID, "task", taskID, "agent", agent, "err", cause)
	if agent == "" {
		agent = DurableName
	}
	reason := fmt.Sprintf("%s: the result could not be decoded: %v", schemas.CodeMalformedResult, cause)
	if err := o.dispatcher.DeadLetter(ctx, agent, m, reason); err != nil {
		o.log.Warn("dead-lettering an undecodable result", "subject", m.Subject(), "err", err)
		_ = m.NakWithDelay(500 * time.Millisecond)
		return
	}
	_ = m.TermWithReason(schemas.CodeMalformedResult)
}
