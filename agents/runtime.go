package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// doneSetSize is how many finished task ids an instance remembers.
const doneSetSize = 4096

// shutdownTimeout bounds each step of the drain after Run's ctx ended.
const shutdownTimeout = 5 * time.Second

// Runtime serves one agent on the bus: it announces the agent, keeps its
// registry entry alive, takes tasks from the agent's durable consumer with
// bounded concurrency, validates them, runs Execute under the task's deadline
// and publishes the result before it acks. Many instances of one agent share
// the consumer, so starting another copy scales the agent.
type Runtime struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	agent    Agent
	contract schemas.AgentContract
	cfg      config
	log      *slog.Logger
	source   string
	instance schemas.InstanceInfo
	ttl      time.Duration

	versionSubj, versionConsumer                                                     string // "" when the contract has no usable version
	taskSubj, callSubj, announceSubj, departSubj, controlSubj, deadSubj, refusedSubj string
	kvKey                                                                            string
	resultPrefix                                                                     string
	dispatcher                                                                       *meshcore.Dispatcher // agent-to-agent calls (call.go)

	done    *doneSet
	steps   stepsBucket // the step journal (journal.go)
	params  *paramsCheck
	slots   *slots
	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	// early are cancel requests for tasks this instance holds but has not
	// started yet (prefetched, or being decoded): the task is cancelled as
	// it starts. Kept for earlyCancelTTL, at most maxEarlyCancels.
	early map[string]time.Time

	started  atomic.Bool
	ready    chan struct{}
	seenLive sync.Map // agent name -> time.Time a call found it live (call.go)

	// directGate is held for reading by each direct call and for writing
	// by closeDirect, which sets directClosed.
	directGate   sync.RWMutex
	directClosed bool
}

// NewRuntime returns a runtime serving a on nc. It checks the agent's
// contract against the data type registry and the agent name against the
// subject rules. Options: WithNames, WithConcurrency, WithHeartbeat,
// WithInstanceID, WithRegistry, WithValueResolver, WithMaxDeliver,
// WithBackoff, WithAckWait, WithLogger, WithVersion, WithObserver,
// WithCallLimits, WithJournal.
func NewRuntime(nc *nats.Conn, a Agent, opts ...Option) (*Runtime, error) {
	if nc == nil {
		return nil, errorf(ErrInvalidOption, "NewRuntime: nil NATS connection")
	}
	if a == nil {
		return nil, errorf(ErrInvalidAgent, "NewRuntime: nil agent")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	c := a.Contract()
	if cfg.agentVer != "" {
		c.Version = cfg.agentVer
	}
	if err := c.ValidateWith(cfg.registry); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidAgent, err)
	}
	// The types the agent declares are its own to validate its inputs
	// and outputs with.
	for _, def := range c.DataTypes {
		if err := cfg.registry.Declare(def, c.Name); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidAgent, err)
		}
	}
	if err := bus.ValidateAgentName(c.Name); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidAgent, err)
	}
	if cfg.instanceID == "" {
		cfg.instanceID = strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("agents: jetstream: %w", err)
	}
	r := &Runtime{
		nc: nc, js: js, agent: a, contract: c, cfg: cfg,
		log:     telemetry.Logger(cfg.logger).With("agent", c.Name, "instance", cfg.instanceID),
		source:  "/agentmesh/agents/" + c.Name + "/" + cfg.instanceID,
		ttl:     registryTTL(cfg.heartbeat),
		kvKey:   c.Name + "." + cfg.instanceID,
		done:    newDoneSet(doneSetSize),
		params:  newParamsCheck(c),
		slots:   newSlots(cfg.concurrency),
		running: map[string]context.CancelCauseFunc{},
		early:   map[string]time.Time{},
		ready:   make(chan struct{}),
	}
	host, _ := os.Hostname()
	r.instance = schemas.InstanceInfo{
		ID: cfg.instanceID, Host: host, PID: os.Getpid(), StartedAt: time.Now().UTC(),
		Version: cfg.version, Concurrency: cfg.concurrency,
	}
	n := cfg.names
	// The name was validated above, so these cannot fail.
	r.taskSubj, _ = n.Task(c.Name)
	if c.Version != "" {
		if tok, err := bus.VersionToken(c.Version); err != nil {
			r.log.Warn("the contract's version cannot name a subject: this instance takes no task pinned to its version nor any share of a rollout", "version", c.Version, "err", err)
		} else {
			r.versionSubj, _ = n.TaskVersion(c.Name, c.Version)
			r.versionConsumer = bus.VersionConsumer(c.Name, tok)
		}
	}
	r.callSubj, _ = n.Call(c.Name)
	r.announceSubj, _ = n.Announce(c.Name)
	r.departSubj, _ = n.Depart(c.Name)
	r.controlSubj, _ = n.Control(c.Name)
	r.deadSubj, _ = n.Dead(c.Name)
	r.refusedSubj, _ = n.DeadRefused(c.Name)
	r.resultPrefix = strings.TrimSuffix(n.AgentResults(c.Name), ">")
	r.dispatcher = meshcore.NewDispatcher(js, n, r.source)
	return r, nil
}

// InstanceID returns the id of this instance: the last token of its registry
// key and of the source of every event it emits.
func (r *Runtime) InstanceID() string { return r.cfg.instanceID }

// Ready is closed once Run has bound the consumer and announced the agent.
func (r *Runtime) Ready() <-chan struct{} { return r.ready }

// Announcement is what this instance announces.
func (r *Runtime) Announcement() schemas.Announcement {
	return schemas.Announcement{Contract: r.contract, Instance: r.instance}
}

// Run serves the agent until ctx ends, then drains: it stops fetching tasks,
// lets the running ones finish and publish their results, announces its
// departure and deletes its registry entry. It returns nil after a clean
// drain, and an error when the agent could not start. It is long because
// it is the instance's life in order (bind, announce, serve, drain,
// depart), each step undoing the ones before it when it fails.
func (r *Runtime) Run(ctx context.Context) error {
	if !r.started.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	n := r.cfg.names
	kv, err := r.js.KeyValue(ctx, n.AgentsBucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		// The first process of a new mesh creates it. A mesh that already
		// exists is never re-provisioned from here, so an operator's own
		// settings (replicas, ages) are left alone.
		var res *bus.Resources
		if res, err = bus.Provision(ctx, r.js, n, bus.ProvisionOptions{}); err == nil {
			kv = res.Agents
		}
	}
	if err != nil {
		return fmt.Errorf("agents: %s: agents bucket %s: %w (provision the mesh first, e.g. bus.Provision)", r.contract.Name, n.AgentsBucket(), err)
	}
	// A cluster electing a leader, or busy placing the consumer's
	// replicas, may not answer at once: try again for up to two minutes.
	cons, err := bus.Retry(ctx, 2*time.Minute, func(err error) {
		r.log.Warn("the server did not answer creating the consumer; trying again", "stream", n.TasksStream(), "err", err)
	}, func() (jetstream.Consumer, error) {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		return r.js.CreateOrUpdateConsumer(cctx, n.TasksStream(), jetstream.ConsumerConfig{
			Durable:       r.contract.Name,
			Description:   "tasks of agent " + r.contract.Name + ", shared by its instances",
			FilterSubject: r.taskSubj,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       r.cfg.ackWait,
			MaxDeliver:    r.cfg.maxDeliver,
		})
	})
	if err != nil {
		return fmt.Errorf("agents: %s: consumer on stream %s: %w", r.contract.Name, n.TasksStream(), err)
	}
	vcons := r.versionConsumerOf(ctx)
	var cleanup []func()
	defer func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}()
	svc, err := micro.AddService(r.nc, micro.Config{
		Name:        r.contract.Name,
		Version:     semver(r.contract.Version),
		Description: r.contract.Description,
		Metadata:    map[string]string{"instance": r.cfg.instanceID, "capability": r.contract.Capability},
	})
	if err != nil {
		return fmt.Errorf("agents: %s: micro service: %w", r.contract.Name, err)
	}
	cleanup = append(cleanup, func() { _ = svc.Stop() })
	if err := r.addCallEndpoint(svc); err != nil {
		return fmt.Errorf("agents: %s: micro endpoint %s: %w", r.contract.Name, EndpointCall, err)
	}
	for _, s := range []struct {
		subj string
		h    nats.MsgHandler
	}{{n.RegistryQuery(), r.answerQuery}, {r.controlSubj, r.handleControl}} {
		sub, err := r.nc.Subscribe(s.subj, s.h)
		if err != nil {
			return fmt.Errorf("agents: %s: subscribing %s: %w", r.contract.Name, s.subj, err)
		}
		cleanup = append(cleanup, func() { _ = sub.Unsubscribe() })
	}
	if err := r.announce(ctx); err != nil {
		return err
	}
	close(r.ready)
	r.log.Info("serving", "tasks", r.taskSubj, "direct", r.callSubj, "concurrency", r.cfg.concurrency, "heartbeat", r.cfg.heartbeat)

	hbCtx, stopHB := context.WithCancel(context.Background())
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		r.heartbeat(hbCtx)
	}()

	conss := []jetstream.Consumer{cons}
	if vcons != nil {
		conss = append(conss, vcons)
	}
	r.consume(ctx, conss...)
	_ = svc.Stop() // drains the direct call endpoint
	r.closeDirect()

	stopHB()
	<-hbDone
	return r.depart(kv)
}

// versionConsumerOf binds the consumer of the instance's version
// (mesh.task.<agent>.v.<version>), or returns nil when the contract has no
// usable version or the consumer cannot be made (an identity not allowed
// to: the instance then takes the agent's unversioned tasks alone, and
// says why).
func (r *Runtime) versionConsumerOf(ctx context.Context) jetstream.Consumer {
	if r.versionSubj == "" {
		return nil
	}
	n := r.cfg.names
	if creds := bus.CredentialsOf(r.nc); creds != nil {
		api := "$JS.API.CONSUMER.CREATE." + n.TasksStream() + "." + r.versionConsumer + "." + r.versionSubj
		if !creds.MayPublish(api) {
			// The usual case on a secure mesh that rolls no version out:
			// said at info level.
			r.log.Info("these credentials may not take the tasks of this version: the instance takes no task pinned to it nor any share of a rollout; issue them with 'agentmesh creds agent NAME --version VERSION'", "version", r.contract.Version)
			return nil
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cons, err := r.js.CreateOrUpdateConsumer(cctx, n.TasksStream(), jetstream.ConsumerConfig{
		Durable:       r.versionConsumer,
		Description:   "tasks of version " + r.contract.Version + " of agent " + r.contract.Name + ": pinned, or its share of a rollout",
		FilterSubject: r.versionSubj,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       r.cfg.ackWait,
		MaxDeliver:    r.cfg.maxDeliver,
	})
	if err != nil {
		r.log.Warn("no consumer of this version: the instance takes no task pinned to it nor any share of a rollout", "consumer", r.versionConsumer, "subject", r.versionSubj, "err", err)
		return nil
	}
	return cons
}

// heartbeat re-announces every heartbeat until ctx ends.
func (r *Runtime) heartbeat(ctx context.Context) {
	t := time.NewTicker(r.cfg.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			actx, cancel := context.WithTimeout(ctx, r.cfg.heartbeat)
			if err := r.announce(actx); err != nil && ctx.Err() == nil {
				r.log.Warn("heartbeat", "err", err)
			}
			cancel()
		}
	}
}

// announce publishes the announcement event and refreshes the registry key.
func (r *Runtime) announce(ctx context.Context) error {
	a := r.Announcement()
	ev, err := bus.NewEvent(bus.TypeAgentAnnounced, r.source, a)
	if err != nil {
		return err
	}
	ev.DataContentType = bus.ContentTypeJSON
	msg, err := bus.Encode(r.announceSubj, ev)
	if err != nil {
		return err
	}
	if err := r.nc.PublishMsg(msg); err != nil {
		return fmt.Errorf("agents: %s: announcing: %w", r.contract.Name, err)
	}
	// Tried again at once while the bucket cannot answer (its leader on a
	// node cut off, a new one being elected), not at the next heartbeat:
	// the key's life runs meanwhile, and readers take the instance for
	// gone when it ends.
	if _, err := bus.Retry(ctx, r.cfg.heartbeat, nil, func() (uint64, error) {
		tctx, cancel := context.WithTimeout(ctx, min(r.cfg.heartbeat, heartbeatTry))
		defer cancel()
		return bus.PutTTL(tctx, r.js, r.cfg.names.AgentsBucket(), r.kvKey, ev.Data, r.ttl)
	}); err != nil {
		return fmt.Errorf("agents: %s: registry entry: %w", r.contract.Name, err)
	}
	return nil
}

// heartbeatTry bounds one try of a heartbeat's registry put.
const heartbeatTry = time.Second

// depart announces the departure and removes the registry key.
func (r *Runtime) depart(kv jetstream.KeyValue) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	var errs []error
	ev, err := bus.NewEvent(bus.TypeAgentDeparted, r.source, schemas.Departure{Agent: r.contract.Name, Instance: r.cfg.instanceID})
	if err == nil {
		ev.DataContentType = bus.ContentTypeJSON
		var msg *nats.Msg
		if msg, err = bus.Encode(r.departSubj, ev); err == nil {
			err = r.nc.PublishMsg(msg)
		}
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("announcing departure: %w", err))
	}
	if err := kv.Delete(ctx, r.kvKey); err != nil {
		errs = append(errs, fmt.Errorf("deleting registry key %s: %w", r.kvKey, err))
	}
	if err := r.nc.FlushWithContext(ctx); err != nil {
		errs = append(errs, fmt.Errorf("flushing: %w", err))
	}
	r.log.Info("departed")
	if len(errs) > 0 {
		return fmt.Errorf("agents: %s: drain: %w", r.contract.Name, errors.Join(errs...))
	}
	return nil
}

// answerQuery replies to mesh.registry.query with the announcement.
func (r *Runtime) answerQuery(m *nats.Msg) {
	if m.Reply == "" {
		return
	}
	ev, err := bus.NewEvent(bus.TypeAgentAnnounced, r.source, r.Announcement())
	if err != nil {
		return
	}
	ev.DataContentType = bus.ContentTypeJSON
	reply, err := bus.Encode(m.Reply, ev)
	if err != nil {
		return
	}
	_ = m.RespondMsg(reply)
}

// CancelRequest is the data of a message on mesh.control.<agent>: a
// CloudEvent or plain JSON.
type CancelRequest struct {
	TaskID string `json:"taskid"`
}

// handleControl cancels the running task named by a control message. The
// instance running it replies (when a reply subject is given) with
// {"taskid", "instance", "cancelled": true}.
func (r *Runtime) handleControl(m *nats.Msg) {
	data := m.Data
	if ev, err := bus.Decode(m); err == nil {
		data = ev.Data
	}
	var req CancelRequest
	if err := json.Unmarshal(data, &req); err != nil || req.TaskID == "" {
		r.log.Warn("control message without a taskid", "subject", m.Subject, "body", schemas.Clip(string(m.Data), 200))
		return
	}
	r.mu.Lock()
	cancel, ok := r.running[req.TaskID]
	if !ok {
		r.noteEarlyCancel(req.TaskID, time.Now())
	}
	r.mu.Unlock()
	if !ok {
		return
	}
	cancel(ErrCancelled)
	r.log.Info("task cancelled by request", "task", req.TaskID)
	if m.Reply != "" {
		b, _ := json.Marshal(map[string]any{"taskid": req.TaskID, "instance": r.cfg.instanceID, "cancelled": true})
		_ = m.Respond(b)
	}
}

// earlyCancelTTL is how long a cancel request for a task not (yet)
// running here is kept, and maxEarlyCancels how many are.
const (
	earlyCancelTTL  = time.Minute
	maxEarlyCancels = 1024
)

// noteEarlyCancel keeps a cancel request for a task that is not running
// here: it may be prefetched and start soon. Old requests are dropped.
// r.mu is held.
func (r *Runtime) noteEarlyCancel(taskID string, now time.Time) {
	for id, at := range r.early {
		if now.Sub(at) > earlyCancelTTL || len(r.early) >= maxEarlyCancels {
			delete(r.early, id)
		}
	}
	r.early[taskID] = now
}

// registryTTL is the life of the registry key: three heartbeats, in whole
// seconds (the server keeps per-message TTLs in seconds), at least one.
func registryTTL(heartbeat time.Duration) time.Duration {
	return max(time.Second, (3 * heartbeat).Truncate(time.Second))
}

var semverRE = regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// semver returns v when the micro package accepts it as a version, else 0.0.0.
func semver(v string) string {
	v = strings.TrimPrefix(v, "v")
	if semverRE.MatchString(v) {
		return v
	}
	return "0.0.0"
}
