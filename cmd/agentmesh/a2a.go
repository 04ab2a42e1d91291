package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bridge/a2a"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/httpguard"
)

func init() { register(newA2ACmd) }

// newA2ACmd serves the mesh over A2A on its own HTTP listener (the gateway
// mounts the same handler next to its own routes). It is long for its help
// text, which reads best in one place.
func newA2ACmd(a *app) *cobra.Command {
	var (
		addr    string
		baseURL string
		name    string
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "a2a --http ADDR",
		Short: "Serve the mesh's agents and chat over the A2A protocol (agent cards, JSON-RPC)",
		Long: `Serve the mesh over the Agent2Agent protocol, version 1.0 (JSON-RPC binding),
until SIGTERM or SIGINT. Clients of version 0.3 (no A2A-Version header) are
answered in 0.3.

Every live agent gets an agent card whose skill comes from its contract, and
the mesh's chat (the orchestrator) gets one too:

  GET  /.well-known/agent-card.json                     the chat's card
  POST /a2a/chat                                        the chat's JSON-RPC endpoint
  GET  /a2a/agents                                      every live agent's card
  GET  /a2a/agents/AGENT/.well-known/agent-card.json    one agent's card
  POST /a2a/agents/AGENT                                the agent's JSON-RPC endpoint

Methods: SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask,
SubscribeToTask; requests carry the header A2A-Version: 1.0.

An A2A client pointed at http://ADDR/a2a/agents/AGENT/ (mind the trailing
slash) finds the card. docs/bridges.md says how parts map onto inputs.

The server checks no credentials: anyone who reaches ADDR can run tasks on
the mesh. Listen on 127.0.0.1, or put it behind a proxy that authenticates.
It refuses what a web page could make a browser send: a POST from a page of
another site, and on a loopback address a Host other than a loopback name
or the host of --base-url (DNS rebinding); 403 for both.`,
		Example: `  agentmesh a2a --http 127.0.0.1:8041
  agentmesh a2a --http :8041 --base-url https://mesh.example.com`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if addr == "" {
				return exitError{code: 2, msg: "a2a: give --http ADDR, the address to listen on (e.g. 127.0.0.1:8041)"}
			}
			ctx := cmd.Context()
			ln, err := net.Listen("tcp", addr) // a bad address is told before anything else
			if err != nil {
				return fmt.Errorf("a2a: --http %s: %w (give HOST:PORT, e.g. 127.0.0.1:8041, with a port that is free)", addr, err)
			}
			defer ln.Close()
			a.waitForServer()
			m, err := a.connect(ctx, "agentmesh a2a")
			if err != nil {
				return err
			}
			defer m.Close()
			h, err := a.a2aHandler(ctx, m, a.logger(verbose), baseURL, name)
			if err != nil {
				return err
			}
			defer h.Close()
			// The checks the gateway makes: no foreign Host on a loopback
			// listener (DNS rebinding), no POST from another site's page.
			var hosts []string
			if u, err := url.Parse(baseURL); err == nil && u.Host != "" {
				hosts = append(hosts, u.Host)
			}
			guard, err := httpguard.New(hosts...)
			if err != nil {
				return fmt.Errorf("a2a: --base-url %s: %w", baseURL, err)
			}
			srv := &http.Server{Handler: guard.Handler(h), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			fmt.Fprintf(a.out, "a2a: serving A2A %s on http://%s (chat card at /.well-known/agent-card.json, agent cards under %s)\n", a2a.ProtocolVersion, ln.Addr(), a2a.PathAgents)
			select {
			case err := <-errc:
				return err
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "http", "", "address to serve A2A on, e.g. 127.0.0.1:8041")
	f.StringVar(&baseURL, "base-url", "", "absolute URL clients reach this server by, for the cards (default: the request's host)")
	f.StringVar(&name, "name", "agentmesh", "name of the chat's agent card")
	f.BoolVarP(&verbose, "verbose", "v", false, "log more to stderr")
	return cmd
}

// a2aHandler is the A2A bridge over m, for 'agentmesh a2a' and the gateway.
func (a *app) a2aHandler(ctx context.Context, m *mesh, log *slog.Logger, baseURL, chatName string) (*a2a.Handler, error) {
	opts := []a2a.Option{a2a.WithNames(m.Names), a2a.WithLogger(log), a2a.WithChatName(chatName)}
	if baseURL != "" {
		opts = append(opts, a2a.WithBaseURL(baseURL))
	}
	if m.ID.Role == bus.RoleClient {
		opts = append(opts, a2a.WithClient(m.ID.Name))
	}
	return a2a.NewHandler(ctx, m.NC, opts...)
}

// remoteA2AAgent is the agent of 'agentmesh agent --a2a URL': the remote
// A2A agent whose card is at (or below) url, its files kept in the mesh's
// object store.
func remoteA2AAgent(ctx context.Context, m *mesh, url, name string) (agents.Agent, error) {
	opts := []a2a.RemoteOption{a2a.WithRemoteFiles(m.agentFiles())}
	if name != "" {
		opts = append(opts, a2a.WithRemoteName(name))
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return a2a.NewRemote(cctx, url, opts...)
}
