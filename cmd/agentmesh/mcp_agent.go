package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/agents"
	meshmcp "github.com/agentmesh/agentmesh/bridge/mcp"
	"github.com/agentmesh/agentmesh/resolvers"
)

// mcpAgentFlags are the agent command's settings for --mcp and --mcp-url.
type mcpAgentFlags struct {
	command, url, prefix string
	concurrency          int
	heartbeat, ackWait   time.Duration
	maxDeliver           int
	drain                time.Duration
	verbose              bool
}

// runMCPAgents connects to the MCP server --mcp starts (or --mcp-url
// names) and runs one mesh agent per tool it lists, on one NATS
// connection, until ctx ends; then drains them all.
func runMCPAgents(ctx context.Context, a *app, f mcpAgentFlags) error {
	var t mcp.Transport
	what := f.url
	if f.command != "" {
		var err error
		if t, err = meshmcp.CommandTransport(f.command); err != nil {
			return err
		}
		what = f.command
	} else {
		t = meshmcp.HTTPTransport(f.url)
	}
	log := a.logger(f.verbose)
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	remote, err := meshmcp.Dial(dctx, t, meshmcp.WithPrefix(f.prefix), meshmcp.WithRemoteLogger(log))
	if err != nil {
		return fmt.Errorf("MCP server %q: %w", what, err)
	}
	defer remote.Close()
	tools, err := remote.Agents(dctx)
	if err != nil {
		return fmt.Errorf("MCP server %q: %w", what, err)
	}
	a.waitForServer()
	m, err := a.connect(ctx, "agentmesh agent --mcp "+remote.ServerName())
	if err != nil {
		return err
	}
	defer m.Close()
	opts := []agents.Option{
		agents.WithNames(m.Names),
		agents.WithConcurrency(f.concurrency),
		agents.WithHeartbeat(f.heartbeat),
		agents.WithAckWait(f.ackWait),
		agents.WithMaxDeliver(f.maxDeliver),
		agents.WithValueResolver(resolvers.NewCollections(m.Res.Files, 0)),
		agents.WithLogger(log),
	}
	errc := make(chan error, len(tools))
	for _, ag := range tools {
		rt, err := agents.NewRuntime(m.NC, ag, opts...)
		if err != nil {
			return fmt.Errorf("agent %s: %w", ag.Contract().Name, err)
		}
		go func() { errc <- rt.Run(ctx) }()
		select {
		case <-rt.Ready():
			fmt.Fprintf(a.out, "agent %s (MCP tool of %s) instance %s ready\n", ag.Contract().Name, remote.ServerName(), rt.InstanceID())
		case err := <-errc:
			return fmt.Errorf("agent %s: %w", ag.Contract().Name, err)
		}
	}
	all := make(chan error, 1)
	go func() {
		var errs []error
		for range tools {
			errs = append(errs, <-errc)
		}
		all <- errors.Join(errs...)
	}()
	return a.awaitDrain(ctx, "the MCP agents", f.drain, all)
}
