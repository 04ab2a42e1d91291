package main

import (
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/resolvers"
)

// runtimeFlags are the agent runtime's settings, the same for a built-in
// agent, a PromptAgent, a remote A2A agent and the agents of MCP tools.
type runtimeFlags struct {
	concurrency int
	heartbeat   time.Duration
	ackWait     time.Duration
	maxDeliver  int
	maxColl     int
	callDepth   int
	calls       int
	drain       time.Duration
	verbose     bool
	version     string // --agent-version
}

func (r *runtimeFlags) register(f *pflag.FlagSet) {
	f.IntVar(&r.concurrency, "concurrency", agents.DefaultConcurrency, "tasks this instance runs at once")
	f.DurationVar(&r.heartbeat, "heartbeat", agents.DefaultHeartbeat, "announcement interval; the registry drops a silent instance after 3")
	f.DurationVar(&r.ackWait, "ack-wait", agents.DefaultAckWait, "how long the server waits for this instance before giving its task to another")
	f.IntVar(&r.maxDeliver, "max-deliver", agents.DefaultMaxDeliver, "deliveries of a task before it is dead-lettered")
	f.IntVar(&r.maxColl, "max-collection", agents.DefaultMaxCollection, "most file ids of a spilled collection an input may hold; a larger one fails with limit_exceeded")
	f.IntVar(&r.calls, "max-calls", agents.DefaultMaxCallFanout, "agent-to-agent calls one task may make; one more fails with call_fanout")
	f.IntVar(&r.callDepth, "max-call-depth", agents.DefaultMaxCallDepth, "how deep a chain of agent-to-agent calls starting at one of this agent's tasks may go (call_depth)")
	f.BoolVarP(&r.verbose, "verbose", "v", false, "log every task event to stderr")
	f.StringVar(&r.version, "agent-version", "", "serve the agent as this version (letters, digits, '.', '-'), not its contract's: it also takes the tasks pinned to it and its share of a rollout ('agentmesh rollout')")
	drainFlag(f, &r.drain)
}

// options are the runtime options these settings give on m, logging to log.
func (r *runtimeFlags) options(m *mesh, log *slog.Logger) []agents.Option {
	opts := []agents.Option{
		agents.WithNames(m.Names),
		agents.WithConcurrency(r.concurrency),
		agents.WithHeartbeat(r.heartbeat),
		agents.WithAckWait(r.ackWait),
		agents.WithMaxDeliver(r.maxDeliver),
		agents.WithMaxCollection(r.maxColl),
		agents.WithCallLimits(r.callDepth, r.calls),
		agents.WithValueResolver(resolvers.NewCollections(m.Res.Files, 0)),
		agents.WithLogger(log),
	}
	if r.version != "" {
		opts = append(opts, agents.WithAgentVersion(r.version))
	}
	return opts
}
