package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

func init() { register(newAgentCmd) }

// newAgentCmd is the agent command: long for its help text and flags,
// which read best in one place.
func newAgentCmd(a *app) *cobra.Command {
	var (
		instance string
		config   string
		a2aURL   string // --a2a: a remote A2A agent (a2a.go)
		a2aName  string
		mf       metricsFlags
		mcpFlags mcpAgentFlags // its runtimeFlags are those of every agent
	)
	rf := &mcpFlags.runtimeFlags
	cmd := &cobra.Command{
		Use:   "agent NAME | agent --config FILE | agent --mcp 'COMMAND ARGS' | agent --mcp-url URL",
		Short: "Run one instance of a built-in agent",
		Long: `Run one instance of a built-in agent until SIGTERM or SIGINT, then drain:
stop taking tasks, finish the running ones, announce the departure, exit 0.
Run the command several times to scale the agent: the instances share its tasks.

Built-in agents: ` + strings.Join(builtinNames(), ", ") + `.

With --config FILE, run a PromptAgent: an LLM agent declared in YAML (name,
description, capability, system_prompt, inputs, outputs, params). It needs an
LLM: set OPENAI_API_KEY and/or OPENAI_BASE_URL, and AGENTMESH_MODEL; or
AGENTMESH_MODEL=anthropic:MODEL with ANTHROPIC_API_KEY, or gemini:MODEL with
GEMINI_API_KEY (docs/llm.md).

With --mcp 'COMMAND ARGS' (an MCP server on stdio, started here) or --mcp-url
URL (streamable HTTP), run one agent per tool of that MCP server: the agent is
named after the tool (after --mcp-prefix), its params are the tool's input
schema, an optional TEXT input fills the tool's text argument, and its outputs
are text (TEXT) and, for tools with an output schema, json (JSON). Agents
start and stop as the server's tool list changes. See docs/bridges.md.

With --a2a URL, announce a remote A2A agent (protocol 1.0 or 0.3): its card, at URL
or URL/.well-known/agent-card.json, gives the contract (TEXT input and output
"text", FILE_IDS input and output "files", the skills in the description),
and each task is sent to it with SendMessage.`,
		Example: `  agentmesh agent AnalysisAgent
  agentmesh agent AnalysisAgent --concurrency 8      # run this line twice to get two instances
  agentmesh agent --config agents/builtin/prompt/testdata/haiku.yaml
  agentmesh agent --mcp 'node examples/mcp/server.mjs'
  agentmesh agent --mcp-url http://127.0.0.1:3001/mcp --mcp-prefix Docs_
  agentmesh agent --a2a http://127.0.0.1:9999/ --a2a-name Translator`,
		Args: func(cmd *cobra.Command, args []string) error {
			if config != "" || a2aURL != "" || mcpFlags.command != "" || mcpFlags.url != "" {
				return cobra.NoArgs(cmd, args)
			}
			if len(args) != 1 {
				return fmt.Errorf("name one agent (known: %s), or pass --config FILE for a PromptAgent", strings.Join(builtinNames(), ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if n := countSet(config, a2aURL, mcpFlags.command, mcpFlags.url); n > 1 {
				return fmt.Errorf("give one of --config, --a2a, --mcp and --mcp-url, not %d of them", n)
			}
			if mcpFlags.command != "" || mcpFlags.url != "" {
				return runMCPAgents(ctx, a, mcpFlags)
			}
			var build func() (agents.Agent, error)
			var name string
			var m *mesh
			var pm *procMetrics
			if a2aURL != "" {
				name = a2aURL
				build = func() (agents.Agent, error) { return remoteA2AAgent(ctx, m, a2aURL, a2aName) }
			} else if config != "" {
				name = config
				build = func() (agents.Agent, error) { return promptAgentFromConfig(ctx, m, pm, config) }
			} else {
				name = args[0]
				b, ok := builtins[name]
				if !ok {
					return exitError{code: 2, msg: fmt.Sprintf("no built-in agent %q; known: %s", name, describeBuiltins())}
				}
				build = func() (agents.Agent, error) { return b.build(ctx, m) }
			}
			pm, err := mf.start(a, procRole{running: "runtime", worker: true})
			if err != nil {
				return err
			}
			defer pm.Close()
			a.waitForServer()
			m, err = a.connect(ctx, "agentmesh agent "+name)
			if err != nil {
				return err
			}
			defer m.Close()
			pm.setConn(m.NC)
			ag, err := build()
			if err != nil {
				return fmt.Errorf("building %s: %w", name, err)
			}
			name = ag.Contract().Name
			log := a.logger(rf.verbose)
			opts := append(rf.options(m, log), agents.WithObserver(schemas.Observers(telemetry.LogObserver(log), pm.Observer())))
			if instance != "" {
				opts = append(opts, agents.WithInstanceID(instance))
			}
			rt, err := agents.NewRuntime(m.NC, ag, opts...)
			if err != nil {
				return err
			}
			errc := make(chan error, 1)
			go func() { errc <- rt.Run(ctx) }()
			select {
			case <-rt.Ready():
				pm.setRunning()
				fmt.Fprintf(a.out, "agent %s instance %s ready (concurrency %d, heartbeat %s)\n", name, rt.InstanceID(), rf.concurrency, rf.heartbeat)
			case err := <-errc:
				return err
			}
			return a.awaitDrain(ctx, "agent "+name, rf.drain, errc)
		},
	}
	f := cmd.Flags()
	rf.register(f)
	f.StringVar(&instance, "instance", "", "instance id (default random)")
	mf.register(f)
	f.StringVar(&config, "config", "", "run a PromptAgent declared in this YAML file instead of a built-in agent")
	f.StringVar(&mcpFlags.command, "mcp", "", "start this MCP server command (stdio) and run one agent per tool it offers")
	f.StringVar(&mcpFlags.url, "mcp-url", "", "connect to this MCP server (streamable HTTP) and run one agent per tool it offers")
	f.StringVar(&mcpFlags.prefix, "mcp-prefix", "", "put this before each MCP tool's name to name its agent")
	f.StringVar(&a2aURL, "a2a", "", "announce the remote A2A agent whose card is at this URL (or below it, at .well-known/agent-card.json)")
	f.StringVar(&a2aName, "a2a-name", "", "with --a2a: the agent's name on the mesh (default: the card's name without spaces)")
	return cmd
}

func describeBuiltins() string {
	var parts []string
	for _, n := range builtinNames() {
		parts = append(parts, n+" ("+builtins[n].summary+")")
	}
	return strings.Join(parts, ", ")
}

// countSet counts the non-empty values among flags that exclude each other.
func countSet(values ...string) int {
	n := 0
	for _, v := range values {
		if v != "" {
			n++
		}
	}
	return n
}
