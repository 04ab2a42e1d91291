package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// Names of the tools the server offers besides the agents. An agent of
// the same name is left out of the tool list (and logged).
const (
	ToolChat        = "chat"
	ToolRunPipeline = "run_pipeline"
)

// Server is a running mesh seen as an MCP server. Build it with NewServer,
// serve its MCP() on any transport (stdio, streamable HTTP), and run Follow
// so the tool list tracks the live agents.
type Server struct {
	mcp   *mcp.Server
	nc    *nats.Conn
	js    jetstream.JetStream
	res   *bus.Resources
	reg   *client.Registry
	files *resolvers.ObjectStore
	disp  *client.Dispatcher
	cfg   serverConfig

	mu    sync.Mutex
	tools map[string]string // agent -> the contract JSON its tool was built from
}

type serverConfig struct {
	names   bus.Names
	log     *slog.Logger
	source  string
	timeout time.Duration
	replyTo func(agent, taskID string) string
	version string
	types   *schemas.DataTypeRegistry
	files   *resolvers.ObjectStore
}

// ServerOption configures a Server.
type ServerOption func(*serverConfig)

// WithNames sets the subject and stream names (default prefix "mesh").
func WithNames(n bus.Names) ServerOption { return func(c *serverConfig) { c.names = n } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) ServerOption { return func(c *serverConfig) { c.log = l } }

// WithTaskTimeout bounds an agent tool call whose agent's contract names no
// timeout, a chat turn and a pipeline run (default 5 minutes).
func WithTaskTimeout(d time.Duration) ServerOption {
	return func(c *serverConfig) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithResultSubject sets where an agent tool call's result is published
// (default mesh.result.<agent>.<taskid>); a client of a secure mesh passes
// Names.ClientResult under its own name.
func WithResultSubject(fn func(agent, taskID string) string) ServerOption {
	return func(c *serverConfig) { c.replyTo = fn }
}

// WithFiles sets the file store its resources are read from (default: the
// mesh's shared bucket); a client's is its own bucket on a secure mesh.
func WithFiles(f *resolvers.ObjectStore) ServerOption { return func(c *serverConfig) { c.files = f } }

// WithVersion sets the version the server reports in its MCP implementation info.
func WithVersion(v string) ServerOption { return func(c *serverConfig) { c.version = v } }

// NewServer returns the MCP server of the mesh whose resources are res,
// reached through nc, with the live agents reg watches as tools. Options:
// WithNames, WithLogger, WithTaskTimeout, WithResultSubject, WithVersion.
func NewServer(nc *nats.Conn, res *bus.Resources, reg *client.Registry, opts ...ServerOption) (*Server, error) {
	cfg := serverConfig{
		names:   bus.MustNames("mesh"),
		log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		source:  "/agentmesh/mcp",
		timeout: 5 * time.Minute,
		version: "dev",
		types:   schemas.DefaultRegistry(),
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.replyTo == nil {
		cfg.replyTo = cfg.names.Result
	}
	if nc == nil || res == nil || reg == nil {
		return nil, fmt.Errorf("mcp: NewServer needs a connection, the mesh's resources and a registry")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	s := &Server{
		nc: nc, js: js, res: res, reg: reg, cfg: cfg,
		disp:  client.NewDispatcher(js, cfg.names, cfg.source),
		tools: map[string]string{},
	}
	if s.files = cfg.files; s.files == nil && res.Files != nil {
		s.files = resolvers.NewObjectStore(res.Files)
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "agentmesh", Title: "agentmesh", Version: cfg.version}, &mcp.ServerOptions{
		Instructions: "The tools are the live agents of an agentmesh (each takes its contract's inputs and params), " +
			"plus chat (one chat turn with the mesh's orchestrator) and run_pipeline (run a declared pipeline). " +
			"Stored files are resources agentmesh://files/<id>; pass their ids to FILE_IDS inputs.",
		Logger: cfg.log,
		// Tools follow the registry and say so; the file list is read
		// afresh at each resources/list, with no list_changed.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Resources: &mcp.ResourceCapabilities{}},
	})
	s.addMeshTools()
	s.addResources()
	s.Sync()
	return s, nil
}

// MCP is the SDK server to run on a transport: s.MCP().Run(ctx, &mcp.StdioTransport{}).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Follow keeps the tool list equal to the live agents until ctx ends: an
// agent that starts becomes a tool, one whose contract changes is
// replaced, one whose last instance stops is removed. Each change sends
// notifications/tools/list_changed to every session.
func (s *Server) Follow(ctx context.Context) {
	for {
		ch := s.reg.Changes()
		s.Sync()
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// Sync makes the tool list equal to the live agents now.
func (s *Server) Sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	live := map[string]bool{}
	for _, a := range s.reg.Agents() {
		c := a.Contract
		if c.Name == ToolChat || c.Name == ToolRunPipeline {
			s.cfg.log.Warn("an agent has the name of a mesh tool; it is not offered over MCP", "agent", c.Name)
			continue
		}
		live[c.Name] = true
		js, _ := json.Marshal(c)
		if s.tools[c.Name] == string(js) {
			continue
		}
		s.tools[c.Name] = string(js)
		s.mcp.AddTool(s.agentTool(c), s.callAgent(c.Name))
	}
	var gone []string
	for name := range s.tools {
		if !live[name] {
			gone = append(gone, name)
			delete(s.tools, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
}

// agentTool is the MCP tool of one agent.
func (s *Server) agentTool(c schemas.AgentContract) *mcp.Tool {
	desc := c.Description
	if desc == "" {
		desc = c.Name
	}
	desc += fmt.Sprintf("\nCapability: %s.", c.Capability)
	for _, out := range c.Outputs {
		desc += fmt.Sprintf("\nProduces %s (%s).", out.Name, out.DataType)
	}
	return &mcp.Tool{
		Name:        c.Name,
		Title:       c.Name,
		Description: desc,
		InputSchema: InputSchema(c, s.cfg.types),
		Meta:        mcp.Meta{"io.agentmesh/capability": c.Capability, "io.agentmesh/version": c.Version},
	}
}
