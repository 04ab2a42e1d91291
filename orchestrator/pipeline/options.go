package pipeline

import (
	"log/slog"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// Option configures a Scheduler (see New).
type Option func(*config)

// WithNames sets the subject and bucket names (default prefix "mesh").
func WithNames(n bus.Names) Option { return func(c *config) { c.Names = n } }

// WithStore keeps runs in s (required).
func WithStore(s *state.Store) Option { return func(c *config) { c.Store = s } }

// WithLookup checks pipelines against the live contracts lookup returns
// (required).
func WithLookup(lookup ContractLookup) Option { return func(c *config) { c.Lookup = lookup } }

// WithRouter routes step outputs into slots with r (default a new
// route.Router).
func WithRouter(r *route.Router) Option { return func(c *config) { c.Router = r } }

// WithDispatcher publishes tasks with d (default one on nc's JetStream).
func WithDispatcher(d *meshcore.Dispatcher) Option { return func(c *config) { c.Dispatcher = d } }

// WithModel has router steps ask m to choose their branch; without one
// they follow their rules.
func WithModel(m Model) Option { return func(c *config) { c.Model = m } }

// WithPipelines returns the spec of a pipeline by name, for the steps of
// kind pipeline that name one (see resolveSubs).
func WithPipelines(fn func(name string) (pipelinespec.PipelineSpec, error)) Option {
	return func(c *config) { c.Pipelines = fn }
}

// WithSweep sets how often overdue steps are timed out and unconfirmed
// dispatches published again (default 1 s).
func WithSweep(d time.Duration) Option { return func(c *config) { c.Sweep = d } }

// WithGrace sets how long after a step's deadline the sweep fails it,
// leaving the agent time to report its own timeout (default 1 s).
func WithGrace(d time.Duration) Option { return func(c *config) { c.Grace = d } }

// WithRepublish sets how long after a wave started the sweep publishes its
// tasks again when no result came (default 2 s).
func WithRepublish(d time.Duration) Option { return func(c *config) { c.Republish = d } }

// WithAckWait gives the results consumer's ack wait: an early result waits
// at most half of it for the header that starts its wave (default 5 s).
func WithAckWait(d time.Duration) Option { return func(c *config) { c.AckWait = d } }

// WithSource sets the CloudEvents source of the events it emits (default
// "agentmesh/orchestrator").
func WithSource(s string) Option { return func(c *config) { c.Source = s } }

// WithLimits bounds what a submitted spec may ask (zero fields: the
// defaults, see pipelinespec.Limits).
func WithLimits(l pipelinespec.Limits) Option { return func(c *config) { c.Limits = l } }

// WithLogger logs to l (default: discard).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.Logger = l } }

// WithObserver reports task, step and run transitions to o.
func WithObserver(o schemas.Observer) Option { return func(c *config) { c.Observer = o } }
