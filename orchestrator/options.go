package orchestrator

import (
	"log/slog"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/pipeline"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// Option configures an Orchestrator.
type Option func(*config)

type config struct {
	names      bus.Names
	namesSet   bool
	chat       []chat.Option
	chatOn     bool
	registry   *meshcore.Registry
	router     *route.Router
	values     route.ValueResolver
	workers    int
	sweep      time.Duration
	grace      time.Duration
	republish  time.Duration
	logger     *slog.Logger
	source     string
	stateOpts  []state.Option
	observer   schemas.Observer
	ackWait    time.Duration
	maxPending int

	orphanGrace time.Duration
	model       pipeline.Model
	pipelines   string
	limits      pipelinespec.Limits
	maxDeliver  int
}

// WithPipelinesDir names the directory of the pipelines a step of kind
// pipeline may run by name: pipeline.name N runs the spec in N.yaml (or
// N.yml, N.json) there, read when a run that names it is submitted.
func WithPipelinesDir(dir string) Option { return func(c *config) { c.pipelines = dir } }

// WithModel gives pipeline router steps a language model to choose their
// branch with (an *llm.Client); without one they follow their rules.
func WithModel(m pipeline.Model) Option { return func(c *config) { c.model = m } }

// WithNames sets the subject and bucket names (default prefix "mesh").
func WithNames(n bus.Names) Option { return func(c *config) { c.names, c.namesSet = n, true } }

// WithChat runs a chat loop (package chat) configured by opts
// (chat.WithLLM, chat.WithPlanner, ...) on chat requests; it shares the
// replica's state store, router, dispatcher, registry and observer. Without
// it a chat request is answered with a failed chat.responded saying chat is
// not configured. Given more than once, the options add up.
func WithChat(opts ...chat.Option) Option {
	return func(c *config) { c.chat, c.chatOn = append(c.chat, opts...), true }
}

// WithRegistry uses an existing registry view instead of opening one.
func WithRegistry(r *meshcore.Registry) Option { return func(c *config) { c.registry = r } }

// WithRouter uses router (with its custom slots) instead of a default one.
func WithRouter(r *route.Router) Option { return func(c *config) { c.router = r } }

// WithCollections resolves and spills collections with v (default a
// resolvers.Collections on the files object store).
func WithCollections(v route.ValueResolver) Option { return func(c *config) { c.values = v } }

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
func WithStateOptions(o ...state.Option) Option {
	return func(c *config) { c.stateOpts = append(c.stateOpts, o...) }
}

// WithObserver reports every task, step, run, model call and chat turn
// transition the replica sees to ob (see schemas.Observer); its chat loop
// (WithChat) shares it. Given more than once, every observer
// sees every observation, in the order given. The spans of pipeline runs
// and steps (telemetry.Observer) are always recorded.
func WithObserver(ob schemas.Observer) Option {
	return func(c *config) { c.observer = schemas.Observers(c.observer, ob) }
}

// WithOrphanGrace sets how long a task for an agent that is not registered
// and has never consumed tasks here waits before the replica answers it
// with a failed result, code unknown_agent (default DefaultOrphanGrace; a
// negative d turns the janitor off).
func WithOrphanGrace(d time.Duration) Option { return func(c *config) { c.orphanGrace = d } }

// WithLimits sets the limits a submitted pipeline spec must keep within
// (zero fields: the defaults, see pipelinespec.Limits).
func WithLimits(l pipelinespec.Limits) Option { return func(c *config) { c.limits = l } }

// WithMaxDeliver sets how many times a request on MESH_REQUESTS is
// delivered before it is given up on (0 or less: DefaultMaxDeliver): the
// last delivery of one that still fails is answered with code internal on
// its sender's subject, dead-lettered on mesh.dead.orchestrator with the
// reason, and terminated.
func WithMaxDeliver(n int) Option { return func(c *config) { c.maxDeliver = n } }
