package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/httpguard"
)

// Gateway serves the mesh's HTTP API and dashboard. It is an http.Handler
// and keeps no state but caches of what the mesh says (the registry view,
// recent task results for agent statistics), so several gateways can serve
// one mesh.
type Gateway struct {
	cfg    config
	names  bus.Names
	def    *conn            // the connection given to New
	tokens map[string]*conn // bearer token -> its identity's connection; empty: no tokens required
	mux    *http.ServeMux
	routes []route
	stats  *statsTracker
	guard  *httpguard.Guard
	hooks  map[string]Hook // webhook triggers by name (WithHook)

	closeOnce sync.Once
}

// New returns a gateway serving the mesh that nc is connected to. nc is
// the gateway's own connection (on a secure mesh, one with client, admin
// or orchestrator credentials; see WithIdentity); New binds it to the
// mesh's streams and buckets and starts watching the registry and recent
// results. Options: WithValidator (required), WithPrefix, WithIdentity,
// WithToken, WithHandler, WithSource, WithLogger, WithTaskTimeout,
// WithMaxBody, WithMaxUpload, WithMaxHeader, WithHosts, WithProvision,
// WithHook.
// Call Close when done; the connections stay open (they are the caller's).
func New(ctx context.Context, nc *nats.Conn, opts ...Option) (*Gateway, error) {
	cfg := config{prefix: "mesh", source: "agentmesh/gateway", logger: slog.Default(),
		taskTimeout: 30 * time.Second, maxBody: 1 << 20, maxUpload: defaultMaxUpload, maxHeader: defaultMaxHeader}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.validate == nil {
		return nil, fmt.Errorf("%w: no pipeline validator: give the orchestrator's with WithValidator(orchestrator.ValidatePipeline)", ErrConfig)
	}
	names, err := bus.NewNames(cfg.prefix)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	guard, err := httpguard.New(cfg.hosts...)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	hooks, err := hooksOf(cfg.hooks)
	if err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, names: names, tokens: map[string]*conn{}, guard: guard, hooks: hooks}
	if g.def, err = newConn(ctx, nc, names, cfg.identity, cfg.provision, cfg.source); err != nil {
		return nil, err
	}
	for _, t := range cfg.tokens {
		if t.token == "" {
			g.Close()
			return nil, fmt.Errorf("%w: an empty token", ErrBadToken)
		}
		if _, dup := g.tokens[t.token]; dup {
			g.Close()
			return nil, fmt.Errorf("%w: a token is given twice", ErrBadToken)
		}
		c, err := g.connFor(ctx, t)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.tokens[t.token] = c
	}
	g.stats = newStatsTracker(g.statsConn(), cfg.logger)
	g.mux = http.NewServeMux()
	g.routes = g.apiRoutes()
	for _, rt := range g.routes {
		g.mux.Handle(rt.method+" "+rt.path, g.api(rt))
	}
	g.mux.Handle("/api/", g.api(route{h: g.handleNoRoute, public: true}))
	g.mux.HandleFunc("GET /healthz", g.handleHealthz) // probes: no token
	g.mux.HandleFunc("GET /readyz", g.handleReadyz)
	for _, m := range cfg.handlers {
		g.mux.Handle(m.pattern, m.h)
	}
	g.mux.Handle("/", uiHandler())
	return g, nil
}

// connFor returns the conn of a token's connection, sharing one conn per
// NATS connection.
func (g *Gateway) connFor(ctx context.Context, t tokenConn) (*conn, error) {
	if t.nc == g.def.nc {
		return g.def, nil
	}
	for _, c := range g.tokens {
		if c.nc == t.nc {
			return c, nil
		}
	}
	return newConn(ctx, t.nc, g.names, t.id, g.cfg.provision, g.cfg.source)
}

// statsConn is the connection that reads every agent's results for the
// statistics: the first that may (a client may read only its own).
func (g *Gateway) statsConn() *conn {
	if g.def.id.Role != bus.RoleClient && g.def.id.Role != bus.RoleAgent {
		return g.def
	}
	for _, c := range g.tokens {
		if c.store != nil {
			return c
		}
	}
	return nil
}

// ServeHTTP serves the API, the mounted handlers and the dashboard. Every
// request is checked first, mounted handlers' included: its headers'
// size, its Host (a loopback gateway serves only loopback names: DNS
// rebinding) and, for a state-changing method, that a browser sent it from
// the gateway's own pages (cross-site request forgery); every answer
// carries a strict Content-Security-Policy and nosniff.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.check(w, r) {
		g.mux.ServeHTTP(w, r)
	}
}

// Server returns an HTTP server for the gateway with its limits: request
// headers of at most WithMaxHeader bytes, read within 10 seconds.
func (g *Gateway) Server() *http.Server {
	return &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: int(g.cfg.maxHeader), IdleTimeout: 2 * time.Minute}
}

// Handle mounts h at pattern after New, as WithHandler does.
func (g *Gateway) Handle(pattern string, h http.Handler) { g.mux.Handle(pattern, h) }

// Close stops the registry watches and the statistics consumer. It is safe
// to call more than once.
func (g *Gateway) Close() {
	g.closeOnce.Do(func() {
		if g.stats != nil {
			g.stats.stop()
		}
		seen := map[*conn]bool{}
		for _, c := range append([]*conn{g.def}, mapValues(g.tokens)...) {
			if c != nil && !seen[c] {
				seen[c] = true
				c.stop()
			}
		}
	})
}

func mapValues(m map[string]*conn) []*conn {
	out := make([]*conn, 0, len(m))
	for _, c := range m {
		out = append(out, c)
	}
	return out
}
