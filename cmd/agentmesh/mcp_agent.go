package main

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/prompt"
	meshmcp "github.com/agentmesh/agentmesh/bridge/mcp"
	"github.com/agentmesh/agentmesh/llm"
)

// mcpAgentFlags are the agent command's settings for --mcp and --mcp-url.
type mcpAgentFlags struct {
	command, url, prefix string
	runtimeFlags
}

// mcpTransport is the transport to the MCP server command starts on stdio
// or, without a command, the one at url (streamable HTTP), and the one of
// the two that names it.
func mcpTransport(command, url string) (t mcp.Transport, what string, err error) {
	if command == "" {
		return meshmcp.HTTPTransport(url), url, nil
	}
	t, err = meshmcp.CommandTransport(command)
	return t, command, err
}

// runMCPAgents connects to the MCP server --mcp starts (or --mcp-url
// names) and runs one mesh agent per tool it lists, on one NATS
// connection, following the server's tools/list_changed, until ctx ends;
// then drains them all.
func runMCPAgents(ctx context.Context, a *app, f mcpAgentFlags) error {
	t, what, err := mcpTransport(f.command, f.url)
	if err != nil {
		return err
	}
	log := a.logger(f.verbose)
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	remote, err := meshmcp.Dial(dctx, t, meshmcp.WithPrefix(f.prefix), meshmcp.WithRemoteLogger(log))
	if err != nil {
		return fmt.Errorf("MCP server %q: %w", what, err)
	}
	defer remote.Close()
	if _, err := remote.Agents(dctx); err != nil {
		return fmt.Errorf("MCP server %q: %w", what, err)
	}
	a.waitForServer()
	m, err := a.connect(ctx, "agentmesh agent --mcp "+remote.ServerName())
	if err != nil {
		return err
	}
	defer m.Close()
	opts := f.options(m, log)
	// start runs one tool's agent until its stop (or ctx) ends it.
	start := func(ctx context.Context, ag agents.Agent) (func(), error) {
		rt, err := agents.NewRuntime(m.NC, ag, opts...)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", ag.Contract().Name, err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- rt.Run(rctx) }()
		select {
		case <-rt.Ready():
			fmt.Fprintf(a.out, "agent %s (MCP tool of %s) instance %s ready\n", ag.Contract().Name, remote.ServerName(), rt.InstanceID())
		case err := <-done:
			cancel()
			return nil, fmt.Errorf("agent %s: %w", ag.Contract().Name, err)
		}
		return func() {
			cancel()
			if err := <-done; err != nil {
				log.Error("agent of an MCP tool stopped", "agent", ag.Contract().Name, "err", err)
			}
		}, nil
	}
	errc := make(chan error, 1)
	go func() { errc <- remote.Follow(ctx, start) }()
	return a.awaitDrain(ctx, "the MCP agents", f.drain, errc)
}

// promptMCPTools connects to the MCP servers of a PromptAgent's config
// (its mcp: list) and gives their tools to the agent's model. The
// sessions last as long as the process; a server started on stdio ends
// with it.
func promptMCPTools(ctx context.Context, cfg prompt.Config) (prompt.Option, error) {
	var tools []prompt.Tool
	for i, s := range cfg.MCP {
		t, what, err := mcpTransport(s.Command, s.URL)
		if err != nil {
			return nil, fmt.Errorf("%s: mcp[%d]: %w", cfg.Name, i, err)
		}
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		remote, err := meshmcp.Dial(dctx, t)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("%s: MCP server %q: %w", cfg.Name, what, err)
		}
		rts, err := remote.Tools(dctx, s.Tools...)
		cancel()
		if err != nil {
			_ = remote.Close()
			return nil, fmt.Errorf("%s: MCP server %q: %w", cfg.Name, what, err)
		}
		for _, rt := range rts {
			tools = append(tools, rt)
		}
	}
	model, err := toolModelFromEnv()
	if err != nil {
		return nil, err
	}
	return prompt.WithTools(model, tools...), nil
}

// toolModelFromEnv is the configured LLM as a prompt.ToolModel, or nil
// without one (the agent then says how to configure it).
func toolModelFromEnv() (prompt.ToolModel, error) {
	cfg, err := llm.ConfigFromEnv()
	if err != nil || !cfg.Configured() {
		return nil, err
	}
	c, err := llm.New(cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}
