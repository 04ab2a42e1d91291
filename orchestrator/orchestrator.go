package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// DurableName is the durable consumer all orchestrator replicas share, on
// MESH_RESULTS (filtered on mesh.result.orchestrator.>) and on MESH_REQUESTS.
const DurableName = "orchestrator"

// Step and run event types on mesh.events.<run>.pipeline.
const (
	TypeStepStarted   = bus.TypePipelineStepPrefix + "started"
	TypeStepCompleted = bus.TypePipelineStepPrefix + "completed"
	TypeStepFailed    = bus.TypePipelineStepPrefix + "failed"
	TypeStepSkipped   = bus.TypePipelineStepPrefix + "skipped"
)

// StepEvent is the data of an io.agentmesh.pipeline.step.* event.
type StepEvent struct {
	RunID      string                   `json:"runid"`
	Step       string                   `json:"step"`
	Agent      string                   `json:"agent"`
	Status     string                   `json:"status"`
	Wave       int                      `json:"wave"`
	Attempt    int                      `json:"attempt,omitempty"`
	TaskID     string                   `json:"taskid,omitempty"`
	Summary    string                   `json:"summary,omitempty"`
	Error      string                   `json:"error,omitempty"`
	Reason     string                   `json:"reason,omitempty"`
	DurationMS int64                    `json:"duration_ms,omitempty"`
	Outputs    map[string]OutputSummary `json:"outputs,omitempty"`
	At         time.Time                `json:"at"`
}

// OutputSummary describes one output without its value.
type OutputSummary struct {
	DataType string `json:"data_type"`
	Hint     string `json:"content_type_hint,omitempty"`
	Count    int    `json:"count,omitempty"`
}

// RunEvent is the data of io.agentmesh.pipeline.completed.
type RunEvent struct {
	RunID      string `json:"runid"`
	Name       string `json:"name,omitempty"`
	Status     string `json:"status"`
	Error      string `json:"error,omitempty"`
	Completed  int    `json:"completed"`
	Failed     int    `json:"failed"`
	Skipped    int    `json:"skipped"`
	Steps      int    `json:"steps"`
	DurationMS int64  `json:"duration_ms"`
}

// stepEvent describes how a step ended.
func stepEvent(runID string, st *StepState, now time.Time) StepEvent {
	e := StepEvent{RunID: runID, Step: st.ID, Agent: st.Agent, Status: st.Status, Wave: st.Wave, Attempt: st.Attempt,
		TaskID: st.TaskID, Summary: st.Summary, Error: st.Error, Reason: st.Reason, At: now}
	if !st.DispatchedAt.IsZero() && !st.FinishedAt.IsZero() {
		e.DurationMS = st.FinishedAt.Sub(st.DispatchedAt).Milliseconds()
	}
	for name, v := range st.Outputs {
		if e.Outputs == nil {
			e.Outputs = map[string]OutputSummary{}
		}
		s := OutputSummary{DataType: v.DataType, Hint: v.ContentTypeHint}
		if v.DataType == schemas.TypeFileIDs {
			if fc, err := v.Files(); err == nil {
				s.Count = fc.Count()
			}
		}
		e.Outputs[name] = s
	}
	return e
}

func (h *runHeader) runEvent() RunEvent {
	e := RunEvent{RunID: h.ID, Name: h.Name, Status: h.Status, Error: h.Error, Steps: h.Steps,
		Completed: h.Completed, Failed: len(h.Failed), Skipped: len(h.Skipped)}
	if !h.FinishedAt.IsZero() {
		e.DurationMS = h.FinishedAt.Sub(h.CreatedAt).Milliseconds()
	}
	return e
}

// ChatHandler handles one io.agentmesh.chat.requested event taken from
// MESH_REQUESTS. The request is acknowledged when it returns; the handler
// answers with io.agentmesh.chat.responded itself.
type ChatHandler func(ctx context.Context, ev bus.Event) error

// Option configures an Orchestrator.
type Option func(*config)

type config struct {
	names      bus.Names
	namesSet   bool
	chat       ChatHandler
	registry   *Registry
	router     *Router
	values     ValueResolver
	workers    int
	sweep      time.Duration
	grace      time.Duration
	republish  time.Duration
	logger     *slog.Logger
	source     string
	stateOpts  []StateOption
	ackWait    time.Duration
	maxPending int
}

// WithNames sets the subject and bucket names (default prefix "mesh").
func WithNames(n bus.Names) Option { return func(c *config) { c.names, c.namesSet = n, true } }

// WithChatHandler sends chat requests to h. Without one, a chat request is
// answered with a failed chat.responded saying chat is not configured.
func WithChatHandler(h ChatHandler) Option { return func(c *config) { c.chat = h } }

// WithRegistry uses an existing registry view instead of opening one.
func WithRegistry(r *Registry) Option { return func(c *config) { c.registry = r } }

// WithRouter uses router (with its custom slots) instead of a default one.
func WithRouter(r *Router) Option { return func(c *config) { c.router = r } }

// WithCollections resolves and spills collections with v (default a
// resolvers.Collections on the files object store).
func WithCollections(v ValueResolver) Option { return func(c *config) { c.values = v } }

// WithWorkers sets how many events are handled at once (default 32).
func WithWorkers(n int) Option { return func(c *config) { c.workers = n } }

// WithSweepInterval sets how often overdue steps are timed out and
// unconfirmed dispatches re-published (default 1 s).
func WithSweepInterval(d time.Duration) Option { return func(c *config) { c.sweep = d } }

// WithTimeoutGrace sets how long after a step's deadline the sweep fails
// it, leaving the agent time to report its own timeout (default 1 s).
func WithTimeoutGrace(d time.Duration) Option { return func(c *config) { c.grace = d } }

// WithAckWait sets how long a handed-out message may stay unacknowledged
// before JetStream gives it to another replica (default 5 s; long chat
// turns keep their request alive). Every replica should use the same.
func WithAckWait(d time.Duration) Option { return func(c *config) { c.ackWait = d } }

// WithLogger logs to l (default: discard).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithSource sets the CloudEvents source of emitted events.
func WithSource(s string) Option { return func(c *config) { c.source = s } }

// WithStateOptions configures the state store.
func WithStateOptions(o ...StateOption) Option {
	return func(c *config) { c.stateOpts = append(c.stateOpts, o...) }
}

// Orchestrator is one stateless replica: it takes chat requests and
// pipeline submissions from MESH_REQUESTS and results from MESH_RESULTS,
// each through a durable consumer shared by all replicas, and keeps every
// fact in KV. Any number of replicas may run; killing one loses nothing.
type Orchestrator struct {
	cfg        config
	nc         *nats.Conn
	js         jetstream.JetStream
	names      bus.Names
	store      *StateStore
	router     *Router
	inputs     *InputBuilder
	dispatcher *Dispatcher
	registry   *Registry
	ownsReg    bool
	runsKV     jetstream.KeyValue
	kvjs       jetstream.JetStream // pipelined KV writes (see commitPipelined)
	log        *slog.Logger

	locks keyedMutex // serialises this replica's header updates of one run
	cache runCache

	batchMu sync.Mutex
	batches map[string]*settleBatch // per run: records waiting for the header update

	mu     sync.Mutex
	active map[string]bool // runs this replica's sweep looks at
	dirty  map[string]bool // runs changed since the last sweep
}

// New returns a replica on nc. The mesh must be provisioned (bus.Provision).
// Options: WithNames, WithChatHandler, WithRegistry, WithRouter,
// WithCollections, WithWorkers, WithSweepInterval, WithTimeoutGrace, WithAckWait,
// WithLogger, WithSource, WithStateOptions.
func New(nc *nats.Conn, opts ...Option) (*Orchestrator, error) {
	cfg := config{workers: 32, sweep: time.Second, grace: time.Second, republish: 2 * time.Second,
		source: "agentmesh/orchestrator", ackWait: 5 * time.Second, maxPending: 10000}
	for _, o := range opts {
		o(&cfg)
	}
	if !cfg.namesSet {
		cfg.names = bus.MustNames(bus.DefaultPrefix)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: jetstream: %w", err)
	}
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
		cfg.router = NewRouter(WithValueResolver(cfg.values))
	}
	o := &Orchestrator{cfg: cfg, nc: nc, js: js, names: cfg.names, router: cfg.router,
		store: NewStateStore(convs, runs, cfg.stateOpts...), inputs: NewInputBuilder(cfg.router),
		dispatcher: NewDispatcher(js, cfg.names, cfg.source), registry: cfg.registry, runsKV: runs, kvjs: kvjs,
		log: cfg.logger, active: map[string]bool{}, dirty: map[string]bool{}, batches: map[string]*settleBatch{}}
	if o.registry == nil {
		agentsKV, err := bind(cfg.names.AgentsBucket())
		if err != nil {
			return nil, err
		}
		if o.registry, err = NewRegistry(ctx, agentsKV); err != nil {
			return nil, err
		}
		o.ownsReg = true
	}
	return o, nil
}

// Store returns the state store.
func (o *Orchestrator) Store() *StateStore { return o.store }

// Router returns the context router.
func (o *Orchestrator) Router() *Router { return o.router }

// Inputs returns the input builder.
func (o *Orchestrator) Inputs() *InputBuilder { return o.inputs }

// Dispatcher returns the task dispatcher.
func (o *Orchestrator) Dispatcher() *Dispatcher { return o.dispatcher }

// Registry returns the live registry view.
func (o *Orchestrator) Registry() *Registry { return o.registry }

// Names returns the subject and bucket names.
func (o *Orchestrator) Names() bus.Names { return o.names }

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

// RunReady is Run calling ready once the consumers are in place.
func (o *Orchestrator) RunReady(ctx context.Context, ready func()) error {
	if o.ownsReg {
		defer o.registry.Stop()
	}
	setup, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	results, err := o.js.CreateOrUpdateConsumer(setup, o.names.ResultsStream(), jetstream.ConsumerConfig{
		Durable: DurableName, FilterSubject: o.names.OrchestratorResults(), AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: o.cfg.ackWait, MaxAckPending: o.cfg.maxPending, DeliverPolicy: jetstream.DeliverAllPolicy,
		Description: "orchestrator replicas: results of tasks they dispatched",
	})
	if err != nil {
		return fmt.Errorf("orchestrator: results consumer: %w", err)
	}
	requests, err := o.js.CreateOrUpdateConsumer(setup, o.names.RequestsStream(), jetstream.ConsumerConfig{
		Durable: DurableName, AckPolicy: jetstream.AckExplicitPolicy, AckWait: o.cfg.ackWait,
		MaxAckPending: o.cfg.maxPending, Description: "orchestrator replicas: chat requests and pipeline submissions",
	})
	if err != nil {
		return fmt.Errorf("orchestrator: requests consumer: %w", err)
	}
	// Every run writes its spec once, when it starts: the sweep learns of
	// every run from the spec keys, not from its header (written at every
	// step, which would send each replica a message per step).
	watcher, err := o.runsKV.Watch(ctx, specKey("*"), jetstream.MetaOnly())
	if err != nil {
		return fmt.Errorf("orchestrator: watching runs: %w", err)
	}
	defer func() { _ = watcher.Stop() }()

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
	qc, err := requests.Consume(submit(func(m jetstream.Msg) { o.handleRequest(hctx, m) }))
	if err != nil {
		rc.Stop()
		return fmt.Errorf("orchestrator: consuming requests: %w", err)
	}
	sweepDone := make(chan struct{})
	go func() {
		defer close(sweepDone)
		o.sweepLoop(ctx, watcher)
	}()
	o.log.Info("orchestrator ready")
	if ready != nil {
		ready()
	}
	<-ctx.Done()
	rc.Drain()
	qc.Drain()
	<-rc.Closed()
	<-qc.Closed()
	<-sweepDone
	inflight.Wait()
	close(work)
	wg.Wait()
	return nil
}

// handleRequest takes one message from MESH_REQUESTS.
func (o *Orchestrator) handleRequest(ctx context.Context, m jetstream.Msg) {
	ev, err := decodeJS(m)
	if err != nil {
		o.log.Warn("malformed request", "subject", m.Subject(), "err", err)
		o.rejectRequest(ctx, m.Subject(), ev, fmt.Errorf("malformed request: %w", err))
		_ = m.Term()
		return
	}
	switch ev.Type {
	case bus.TypePipelineSubmitted:
		if err := o.submit(ctx, ev); err != nil {
			o.log.Warn("pipeline submission", "id", ev.ID, "err", err)
			_ = m.NakWithDelay(time.Second)
			return
		}
	case bus.TypeChatRequested:
		if o.cfg.chat == nil {
			o.rejectRequest(ctx, m.Subject(), ev, fmt.Errorf("%w: start it with an LLM or the offline planner", ErrNoChat))
			break
		}
		stop := keepAlive(m, o.cfg.ackWait/3)
		err := o.cfg.chat(ctx, ev)
		stop()
		if err != nil {
			o.log.Warn("chat request", "id", ev.ID, "err", err)
		}
	default:
		o.rejectRequest(ctx, m.Subject(), ev, fmt.Errorf("unexpected event type %q on %s; expected %s or %s",
			ev.Type, m.Subject(), bus.TypeChatRequested, bus.TypePipelineSubmitted))
	}
	_ = m.Ack()
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
// response event, so a client is never left waiting in silence.
func (o *Orchestrator) rejectRequest(ctx context.Context, subject string, ev bus.Event, cause error) {
	if subject == o.names.ChatRequest() || ev.Type == bus.TypeChatRequested {
		var req schemas.ChatRequest
		_ = ev.DataAs(&req)
		id := req.ConversationID
		if id == "" {
			id = ev.ID
		}
		if bus.ValidateToken("conversation id", id) != nil {
			return
		}
		o.emit(o.names.Events(id, "chat"), bus.TypeChatResponded, schemas.ChatResponse{
			ConversationID: id, State: schemas.ChatFailed, Error: cause.Error()}, func(e *bus.Event) {
			e.SetExt(bus.ExtConversationID, id)
		})
		return
	}
	id := ev.Ext(bus.ExtRunID)
	if id == "" {
		id = ev.ID
	}
	if bus.ValidateToken("run id", id) != nil {
		return
	}
	o.emit(o.names.Events(id, "pipeline"), bus.TypePipelineCompleted,
		RunEvent{RunID: id, Status: RunFailed, Error: cause.Error()}, func(e *bus.Event) { e.SetExt(bus.ExtRunID, id) })
}

// handleResult takes one result from MESH_RESULTS.
func (o *Orchestrator) handleResult(ctx context.Context, m jetstream.Msg) {
	ev, err := decodeJS(m)
	if err != nil {
		o.log.Warn("malformed result", "subject", m.Subject(), "err", err)
		_ = m.Term()
		return
	}
	var res schemas.AgentResult
	if err := bus.DecodeData(ev, &res, nil); err != nil {
		o.log.Warn("result data", "id", ev.ID, "err", err)
		_ = m.Term()
		return
	}
	taskID := ev.Ext(bus.ExtTaskID)
	switch {
	case ev.Ext(bus.ExtRunID) != "":
		err = o.applyRunResult(ctx, ev.Ext(bus.ExtRunID), ev.Ext(bus.ExtStepID), taskID, res)
	case ev.Ext(bus.ExtConversationID) != "":
		err = o.applyConversationResult(ctx, ev.Ext(bus.ExtConversationID), taskID, res)
	}
	if errors.Is(err, errEarly) {
		o.log.Debug("result ahead of its wave: handled again shortly", "task", taskID, "err", err)
		_ = m.NakWithDelay(100 * time.Millisecond)
		return
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		o.log.Warn("applying result", "task", taskID, "err", err)
		_ = m.NakWithDelay(500 * time.Millisecond)
		return
	}
	_ = m.Ack()
}

// applyConversationResult routes a chat task's result into its
// conversation (idempotent by task id), so the state survives the replica
// that ran the turn.
func (o *Orchestrator) applyConversationResult(ctx context.Context, convID, taskID string, res schemas.AgentResult) error {
	contract, _ := o.Lookup(res.Agent)
	_, err := o.store.UpdateConversation(ctx, convID, func(st *schemas.ConversationState) error {
		changed, err := o.router.Apply(ctx, st, contract, taskID, res)
		if err != nil {
			return err
		}
		if !changed {
			return ErrUnchanged
		}
		return nil
	})
	return err
}

// traceParentFor derives a stable trace id from the run id, so every task
// of a run shares one trace.
func traceParentFor(runID string) string {
	return fmt.Sprintf("00-%016x%016x-%016x-01", fnv64(runID), fnv64(runID+"/trace"), nonZero())
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func (o *Orchestrator) emitStep(e StepEvent) {
	typ := TypeStepCompleted
	switch e.Status {
	case StepRunning:
		typ = TypeStepStarted
	case StepFailed:
		typ = TypeStepFailed
	case StepSkipped:
		typ = TypeStepSkipped
	}
	o.emit(o.names.Events(e.RunID, "pipeline"), typ, e, func(ev *bus.Event) {
		ev.SetExt(bus.ExtRunID, e.RunID)
		ev.SetExt(bus.ExtStepID, e.Step)
	})
}

// emit publishes a progress event; MESH_EVENTS stores it. Events are best
// effort: state in KV is the truth.
func (o *Orchestrator) emit(subject, typ string, data any, set func(*bus.Event)) {
	ev, err := bus.NewEvent(typ, o.cfg.source, data)
	if err != nil {
		o.log.Warn("event", "type", typ, "err", err)
		return
	}
	if set != nil {
		set(&ev)
	}
	msg, err := bus.Encode(subject, ev)
	if err != nil {
		o.log.Warn("event", "type", typ, "err", err)
		return
	}
	if err := o.nc.PublishMsg(msg); err != nil {
		o.log.Warn("event", "type", typ, "err", err)
	}
}

// SetChatHandler sets the chat handler after New (for handlers that need
// the orchestrator's store, router, inputs and dispatcher). Call it before
// Run.
func (o *Orchestrator) SetChatHandler(h ChatHandler) { o.cfg.chat = h }

// keyedMutex is a set of mutexes by key, dropped when unused.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedEntry{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
