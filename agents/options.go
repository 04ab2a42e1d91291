package agents

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// Defaults of the runtime.
const (
	DefaultConcurrency = 4
	DefaultHeartbeat   = 5 * time.Second
	DefaultMaxDeliver  = 5
	DefaultAckWait     = 30 * time.Second
)

// DefaultBackoff is the delay before each redelivery of a task that failed
// with a retryable error; the last value repeats.
var DefaultBackoff = []time.Duration{time.Second, 5 * time.Second, 15 * time.Second}

// Option configures a Runtime.
type Option func(*config) error

type config struct {
	names       bus.Names
	concurrency int
	heartbeat   time.Duration
	instanceID  string
	registry    *schemas.DataTypeRegistry
	resolver    ValueResolver
	maxDeliver  int
	backoff     []time.Duration
	ackWait     time.Duration
	logger      *slog.Logger
	version     string
	agentVer    string // WithAgentVersion: the contract version served
	observer    schemas.Observer

	maxCallDepth, maxCallFanout int
	callGrace                   time.Duration
	maxCollection               int
	noJournal                   bool // WithJournal(false)
}

func defaultConfig() config {
	return config{
		names:       bus.MustNames(bus.DefaultPrefix),
		concurrency: DefaultConcurrency,
		heartbeat:   DefaultHeartbeat,
		registry:    schemas.DefaultRegistry(),
		maxDeliver:  DefaultMaxDeliver,
		backoff:     DefaultBackoff,
		ackWait:     DefaultAckWait,
		logger:      slog.New(slog.DiscardHandler),
		observer:    schemas.NopObserver{},

		maxCallDepth:  DefaultMaxCallDepth,
		maxCallFanout: DefaultMaxCallFanout,
		callGrace:     DefaultCallGrace,
		maxCollection: DefaultMaxCollection,
	}
}

// WithObserver reports every task this instance takes to ob: received
// from the bus, started, and finished with its outcome (completed, failed,
// retry, dead_letter), code, duration and metrics (see schemas.Observer).
// Metrics and tracing hang here. Given more than once, every observer
// sees every observation, in the order given.
func WithObserver(ob schemas.Observer) Option {
	return func(c *config) error {
		if ob == nil {
			return errorf(ErrInvalidOption, "WithObserver: nil observer")
		}
		c.observer = schemas.Observers(c.observer, ob)
		return nil
	}
}

// WithNames sets the subject prefix names (default prefix "mesh").
func WithNames(n bus.Names) Option {
	return func(c *config) error {
		if n.Prefix() == "" {
			return errorf(ErrInvalidOption, "WithNames: the zero Names; build them with bus.NewNames")
		}
		c.names = n
		return nil
	}
}

// WithConcurrency sets how many tasks one instance runs at once (default 4,
// DefaultConcurrency). The instance also asks the server for up to one
// task more than that ahead of time, so a slot that frees starts its next
// task without a round trip; a prefetched task that never starts is handed
// back (nak) when the instance drains. 4 suits agents that wait on I/O or
// an LLM; raise it for quick agents, lower it to the number of cores for
// CPU-bound ones.
func WithConcurrency(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return errorf(ErrInvalidOption, "concurrency %d: use 1 or more", n)
		}
		c.concurrency = n
		return nil
	}
}

// WithHeartbeat sets the announcement interval (default 5s). The registry
// entry lives for three heartbeats, in whole seconds and at least one (the
// server's granularity), so a silent instance leaves the registry within
// three heartbeats for any heartbeat of 334ms or more. The agents bucket's
// own TTL (bus.ProvisionOptions.AgentTTL, default 15s) must be at least
// three heartbeats.
func WithHeartbeat(d time.Duration) Option {
	return func(c *config) error {
		if d < 10*time.Millisecond {
			return errorf(ErrInvalidOption, "heartbeat %s: use 10ms or more", d)
		}
		c.heartbeat = d
		return nil
	}
}

// WithInstanceID names this instance (default a random id). It becomes a KV
// key token, so it may hold letters, digits, '-', '_' and '='.
func WithInstanceID(id string) Option {
	return func(c *config) error {
		if err := bus.ValidateToken("instance id", id); err != nil {
			return err
		}
		c.instanceID = id
		return nil
	}
}

// WithRegistry sets the data type registry inputs are validated against
// (default schemas.DefaultRegistry()).
func WithRegistry(r *schemas.DataTypeRegistry) Option {
	return func(c *config) error {
		if r == nil {
			return errorf(ErrInvalidOption, "WithRegistry: nil registry")
		}
		c.registry = r
		return nil
	}
}

// WithValueResolver sets what resolves spilled FILE_IDS inputs before Execute
// and spills large FILE_IDS outputs before publishing (resolvers.Collections).
// Without one, values travel as they are.
func WithValueResolver(v ValueResolver) Option {
	return func(c *config) error {
		c.resolver = v
		return nil
	}
}

// WithMaxDeliver sets how many times a task is delivered before it is
// dead-lettered (default 5).
func WithMaxDeliver(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return errorf(ErrInvalidOption, "max deliver %d: use 1 or more", n)
		}
		c.maxDeliver = n
		return nil
	}
}

// WithBackoff sets the delays before redeliveries of retryable failures; the
// last one repeats (default 1s, 5s, 15s).
func WithBackoff(d ...time.Duration) Option {
	return func(c *config) error {
		if len(d) == 0 {
			return errorf(ErrInvalidOption, "WithBackoff: give at least one delay")
		}
		for _, x := range d {
			if x < 0 {
				return errorf(ErrInvalidOption, "backoff %s is negative", x)
			}
		}
		c.backoff = append([]time.Duration(nil), d...)
		return nil
	}
}

// WithAckWait sets how long the server waits for an ack before it
// redelivers a task to another instance (default 30s). While Execute runs
// the runtime sends in-progress acks every AckWait/3.
func WithAckWait(d time.Duration) Option {
	return func(c *config) error {
		if d < 100*time.Millisecond {
			return errorf(ErrInvalidOption, "ack wait %s: use 100ms or more", d)
		}
		c.ackWait = d
		return nil
	}
}

// WithJournal turns the step journal on (the default) or off. Off, the
// tasks' steps (ExecutionContext.Step, model calls, agent-to-agent calls,
// object-store writes) run again on every delivery and nothing is written
// to the steps bucket: for an agent whose effects are all idempotent, or
// to measure the journal's cost (docs/durability.md).
func WithJournal(on bool) Option {
	return func(c *config) error {
		c.noJournal = !on
		return nil
	}
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l != nil {
			c.logger = l
		}
		return nil
	}
}

// WithVersion sets the instance's software version in its announcement.
func WithVersion(v string) Option {
	return func(c *config) error {
		c.version = v
		return nil
	}
}

// WithAgentVersion serves the agent as version v, in place of the version
// its contract declares: the version announced, stamped on each result,
// and whose subject mesh.task.<agent>.v.<v> the instance also takes tasks
// from (docs/protocol.md, "Versions and rollouts"). v must be a version
// bus.VersionToken accepts.
func WithAgentVersion(v string) Option {
	return func(c *config) error {
		if _, err := bus.VersionToken(v); err != nil {
			return fmt.Errorf("%w: WithAgentVersion: %w", ErrInvalidOption, err)
		}
		c.agentVer = v
		return nil
	}
}

// WithCallLimits sets the limits of the agent-to-agent calls this agent's
// tasks make (ExecutionContext.Call): depth, how many calls deep a chain
// that starts at one of its tasks may go (carried down the chain as the
// maxcalldepth extension; a task that arrives with one keeps it), and
// fanout, how many calls one task may make. Defaults DefaultMaxCallDepth
// and DefaultMaxCallFanout.
func WithCallLimits(depth, fanout int) Option {
	return func(c *config) error {
		if depth < 0 || fanout < 0 {
			return errorf(ErrInvalidOption, "WithCallLimits(%d, %d): limits are 0 (no calls) or more", depth, fanout)
		}
		c.maxCallDepth, c.maxCallFanout = depth, fanout
		return nil
	}
}

// WithCallGrace sets how long a call by name waits for the callee to have
// a live instance (one starting, say) before it fails with code
// unknown_agent; default DefaultCallGrace, 0 not at all.
func WithCallGrace(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return errorf(ErrInvalidOption, "WithCallGrace(%v): the grace is 0 (none) or more", d)
		}
		c.callGrace = d
		return nil
	}
}

// WithMaxCollection sets how many file ids a spilled collection given as
// an input may hold (default DefaultMaxCollection): a task with a larger
// one fails with code limit_exceeded before the collection is read.
func WithMaxCollection(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return errorf(ErrInvalidOption, "WithMaxCollection(%d): give 1 or more", n)
		}
		c.maxCollection = n
		return nil
	}
}
