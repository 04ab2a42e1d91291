package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	meshmcp "github.com/agentmesh/agentmesh/bridge/mcp"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/httpguard"
)

func init() { register(newMCPCmd) }

// newMCPCmd is the mcp command: the mesh as an MCP server.
func newMCPCmd(a *app) *cobra.Command {
	var (
		httpAddr string
		timeout  time.Duration
		verbose  bool
	)
	cmd := &cobra.Command{
		Use:   "mcp [--http ADDR]",
		Short: "Serve the mesh to MCP clients: agents as tools, files as resources",
		Long: `Serve the running mesh as a Model Context Protocol server, on stdin/stdout
(what desktop assistants and IDEs start) or, with --http ADDR, as streamable
HTTP on http://ADDR/mcp.

Every live agent is a tool named after it; its input schema is the agent's
params schema plus one property per typed input (TEXT: a string, FILE_IDS: an
array of file ids). Two more tools: chat (one chat turn with the orchestrator)
and run_pipeline (run a pipeline spec given as YAML, JSON or an object). The
tool list follows the registry: clients get notifications/tools/list_changed
when an agent starts or its last instance stops. Stored files are resources
agentmesh://files/<id>. A failed task is a tool result with isError set whose
text starts with the mesh's error code ("invalid_params: ..."). See
docs/bridges.md.

Logs go to stderr; on stdio, stdout carries only the protocol.`,
		Example: `  agentmesh mcp                          # stdio, e.g. in a client's MCP server config
  agentmesh mcp --http 127.0.0.1:8765    # streamable HTTP at http://127.0.0.1:8765/mcp
  npx @modelcontextprotocol/inspector-cli --cli agentmesh mcp --method tools/list`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			m, err := a.connect(ctx, "agentmesh mcp")
			if err != nil {
				return err
			}
			defer m.Close()
			reg, err := client.NewRegistry(ctx, m.Res.Agents)
			if err != nil {
				return err
			}
			defer reg.Stop()
			opts := []meshmcp.ServerOption{
				meshmcp.WithNames(m.Names), meshmcp.WithLogger(a.logger(verbose)),
				meshmcp.WithTaskTimeout(timeout), meshmcp.WithVersion(version()),
			}
			if m.ID.Role == bus.RoleClient {
				// Where only this client may read its results on a secure mesh.
				opts = append(opts, meshmcp.WithResultSubject(func(agent, task string) string {
					return m.Names.ClientResult(agent, m.ID.Name, task)
				}))
				files, err := m.files(ctx)
				if err != nil {
					return err
				}
				opts = append(opts, meshmcp.WithFiles(files))
			}
			s, err := meshmcp.NewServer(m.NC, m.Res, reg, opts...)
			if err != nil {
				return err
			}
			fctx, stop := context.WithCancel(ctx)
			defer stop()
			go s.Follow(fctx)
			if httpAddr == "" {
				err := s.MCP().Run(ctx, &mcp.StdioTransport{})
				if ctx.Err() != nil || errors.Is(err, context.Canceled) {
					return nil
				}
				return err
			}
			return serveMCPHTTP(ctx, a, s, httpAddr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&httpAddr, "http", "", "serve streamable HTTP on ADDR (host:port) at /mcp instead of stdio")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "how long a chat turn, a pipeline run, or a task of an agent whose contract names no timeout may take")
	f.BoolVarP(&verbose, "verbose", "v", false, "log the server's activity to stderr")
	return cmd
}

// serveMCPHTTP serves s as streamable HTTP on addr until ctx ends.
func serveMCPHTTP(ctx context.Context, a *app, s *meshmcp.Server, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	// httpguard refuses a localhost request with a foreign Host (DNS
	// rebinding) and browsers' cross-site requests, as the transport's
	// security notes ask; the gateway makes the same checks.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.MCP() },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true}) // httpguard.CheckHost makes it
	mux.Handle("/mcp", httpguard.Handler(h))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(a.errOut, "agentmesh mcp: streamable HTTP on http://%s/mcp\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}
