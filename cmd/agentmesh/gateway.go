package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/bridge/a2a"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/gateway"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/schemas"
)

func init() { register(newGatewayCmd) }

// defaultHTTP is where up, demo and gateway serve the dashboard and API.
const defaultHTTP = "127.0.0.1:8080"

// minTokenLen is the shortest bearer token a token file may hold.
const minTokenLen = 16

// newGatewayCmd is the gateway command: long for its help text.
func newGatewayCmd(a *app) *cobra.Command {
	var (
		addr      string
		tokenFile string
		verbose   bool
		hosts     []string
		hooks     []string
	)
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Serve the dashboard and the HTTP API of a mesh (stateless; run as many as you like)",
		Long: `gateway serves the web dashboard and the JSON HTTP API of the mesh named by
--nats on --http: agents, tasks, chat, conversations, pipelines, runs, files,
and live server-sent events. The API is described at /api/openapi.json and in
docs/http-api.md. It keeps no state: start several behind a load balancer.

On a secure mesh the gateway connects with --creds (a client's credentials
may not read conversation and run state: give admin or orchestrator
credentials for those pages). With --token-file every /api/ request needs
'Authorization: Bearer TOKEN', and acts with the credentials the token maps
to. The file has one token a line:

  TOKEN  CREDENTIALS-FILE     # e.g. from 'agentmesh creds client alice'

Tokens are at least 16 characters; a relative credentials path is read
from the token file's directory; '#' starts a comment.

Without --token-file the gateway also serves the A2A bridge (agent cards at
/.well-known/agent-card.json and under /a2a/; see 'agentmesh a2a --help').

The gateway is safe to open in a browser: state-changing requests from
pages of other sites are refused (403 cross_origin), JSON endpoints take
application/json only, and a gateway on a loopback address answers only
for loopback names (403 foreign_host, against DNS rebinding). Behind a
reverse proxy on the same machine that passes the users' Host on, name it
with --allow-host. See docs/security.md.

--hook NAME=FILE serves a webhook at POST /api/hooks/NAME: a delivery whose
body is signed with the hook's secret (X-Agentmesh-Signature: sha256=<hex
HMAC-SHA256>, read from $AGENTMESH_HOOK_SECRET_<NAME>, NAME in upper case with
'-' as '_'; at least 16 bytes) submits the pipeline in FILE with the body as
the TEXT seed value body (seed.body). See docs/http-api.md#webhooks.`,
		Example: `  agentmesh gateway --http :8080
  NATS_URL=tls://mesh:4222 NATS_CA=ca.pem agentmesh gateway --creds admin.creds --token-file tokens.txt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			m, err := a.connect(ctx, "agentmesh gateway")
			if err != nil {
				return err
			}
			defer m.Close()
			opts, closeTokens, err := a.tokenOptions(ctx, tokenFile)
			if err != nil {
				return err
			}
			defer closeTokens()
			if len(hosts) > 0 {
				opts = append(opts, gateway.WithHosts(hosts...))
			}
			hookOpts, err := hookOptions(hooks, os.Getenv)
			if err != nil {
				return err
			}
			opts = append(opts, hookOpts...)
			srv, err := a.serveGateway(ctx, m, addr, a.logger(verbose), tokenFile != "", opts...)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.out, "dashboard and API on %s/ (the API is described at %s/api/openapi.json)\n", srv.url, srv.url)
			<-ctx.Done()
			return srv.stop()
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "http", defaultHTTP, "listen address HOST:PORT of the dashboard and API (port 0 picks a free one)")
	f.StringVar(&tokenFile, "token-file", "", "require bearer tokens: a file of lines 'TOKEN CREDENTIALS-FILE'")
	f.BoolVarP(&verbose, "verbose", "v", false, "log each failed request")
	f.StringArrayVar(&hooks, "hook", nil, "serve the webhook POST /api/hooks/NAME: NAME=FILE, the pipeline it submits with the signed body as seed.body; the secret is in $AGENTMESH_HOOK_SECRET_<NAME> (repeat for more)")
	f.StringArrayVar(&hosts, "allow-host", nil, "a host name (or host:port) users reach the gateway by through a reverse proxy on this machine; repeat for more (default: loopback names only)")
	return cmd
}

// gatewayServer is a gateway listening on an address.
type gatewayServer struct {
	url    string
	gw     *gateway.Gateway
	http   *http.Server
	done   chan error
	cancel context.CancelFunc // ends every request's context: event streams return at once
	a2a    *a2a.Handler       // the A2A bridge mounted beside the API, or nil
}

// serveGateway starts a gateway over m on addr and returns once it listens.
// A gateway that takes no bearer tokens also serves the A2A bridge (agent
// cards and JSON-RPC, see 'agentmesh a2a'); the bridge checks no
// credentials, so a gateway with tokens leaves it out.
func (a *app) serveGateway(ctx context.Context, m *mesh, addr string, log *slog.Logger, tokens bool, opts ...gateway.Option) (*gatewayServer, error) {
	base := []gateway.Option{gateway.WithValidator(orchestrator.ValidatePipeline), gateway.WithPrefix(a.prefix), gateway.WithIdentity(m.ID), gateway.WithLogger(log),
		gateway.WithProvision(bus.ProvisionOptions{BindOnly: true})} // connect provisioned the mesh
	var bridge *a2a.Handler
	if !tokens {
		h, err := a.a2aHandler(ctx, m, log, "", "agentmesh")
		if err != nil {
			return nil, err
		}
		bridge = h
		base = append(base, gateway.WithHandler("GET /.well-known/agent-card.json", h), gateway.WithHandler("/a2a/", h))
	}
	gw, err := gateway.New(ctx, m.NC, append(base, opts...)...)
	if err != nil {
		if bridge != nil {
			bridge.Close()
		}
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		gw.Close()
		if bridge != nil {
			bridge.Close()
		}
		return nil, fmt.Errorf("--http %s: %w (another process may use the port: choose another with --http HOST:PORT, or --http \"\" for none)", addr, err)
	}
	reqCtx, cancel := context.WithCancel(context.Background())
	hs := gw.Server() // the gateway's limits on request headers
	hs.BaseContext = func(net.Listener) context.Context { return reqCtx }
	s := &gatewayServer{url: "http://" + ln.Addr().String(), gw: gw, done: make(chan error, 1), cancel: cancel, a2a: bridge, http: hs}
	go func() { s.done <- s.http.Serve(ln) }()
	return s, nil
}

// stop shuts the server down, giving open requests a moment; event
// streams end at once.
func (s *gatewayServer) stop() error {
	if s == nil {
		return nil
	}
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.http.Close()
	}
	s.gw.Close()
	if s.a2a != nil {
		s.a2a.Close()
	}
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// tokenOptions reads a token file and connects once per credentials file
// it names; closeAll drains those connections.
func (a *app) tokenOptions(ctx context.Context, path string) (opts []gateway.Option, closeAll func(), err error) {
	closeAll = func() {}
	if path == "" {
		return nil, closeAll, nil
	}
	entries, err := readTokenFile(path)
	if err != nil {
		return nil, closeAll, err
	}
	conns := map[string]*mesh{}
	closeAll = func() {
		for _, m := range conns {
			m.Close()
		}
	}
	for _, e := range entries {
		m, ok := conns[e.creds]
		if !ok {
			b := *a
			b.creds = e.creds
			if m, err = b.connect(ctx, "agentmesh gateway"); err != nil {
				closeAll()
				return nil, func() {}, fmt.Errorf("--token-file %s line %d: connecting with %s: %w", path, e.line, e.creds, err)
			}
			conns[e.creds] = m
		}
		opts = append(opts, gateway.WithToken(e.token, m.NC, m.ID))
	}
	return opts, closeAll, nil
}

type tokenEntry struct {
	token, creds string
	line         int
}

// readTokenFile parses lines "TOKEN CREDENTIALS-FILE".
func readTokenFile(path string) ([]tokenEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--token-file: %w", err)
	}
	defer f.Close()
	var out []tokenEntry
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case len(fields) != 2:
			return nil, fmt.Errorf("--token-file %s line %d: write 'TOKEN CREDENTIALS-FILE' (two fields), found %d", path, n, len(fields))
		case len(fields[0]) < minTokenLen:
			return nil, fmt.Errorf("--token-file %s line %d: the token is %s; use at least %s (e.g. openssl rand -hex 24)", path, n, schemas.Plural(len(fields[0]), "character", "characters"), schemas.Plural(minTokenLen, "character", "characters"))
		case seen[fields[0]] != 0:
			return nil, fmt.Errorf("--token-file %s line %d: the token of line %d again; give each its own", path, n, seen[fields[0]])
		}
		seen[fields[0]] = n
		creds := fields[1]
		if !filepath.IsAbs(creds) {
			creds = filepath.Join(filepath.Dir(path), creds)
		}
		if _, err := bus.CredsIdentity(creds); err != nil {
			if _, serr := os.Stat(creds); serr != nil {
				return nil, fmt.Errorf("--token-file %s line %d: %w", path, n, serr)
			}
		}
		out = append(out, tokenEntry{token: fields[0], creds: creds, line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--token-file %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--token-file %s holds no tokens; add lines 'TOKEN CREDENTIALS-FILE'", path)
	}
	return out, nil
}

// dashboard is the gateway that up and demo serve beside the mesh, with its
// own connection.
type dashboard struct {
	m    *mesh
	srv  *gatewayServer
	once sync.Once
}

// startDashboard serves the dashboard and API on addr for up and demo
// (none when addr is empty). On a secure mesh it requires a fresh bearer
// token, written to tokenPath (0600), and acts as up's own identity. When
// the address is the default one and taken, it says so and goes on
// without; an address given explicitly must work.
func (a *app) startDashboard(ctx context.Context, addr string, explicit bool, tokenPath string) (*dashboard, error) {
	if addr == "" {
		return nil, nil
	}
	m, err := a.connect(ctx, "agentmesh gateway")
	if err != nil {
		return nil, err
	}
	var opts []gateway.Option
	token := ""
	if tokenPath != "" {
		if token, err = newToken(); err == nil {
			err = os.WriteFile(tokenPath, []byte(token+"\n"), 0o600)
		}
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("the dashboard's token: %w", err)
		}
		opts = append(opts, gateway.WithToken(token, m.NC, m.ID))
	}
	srv, err := a.serveGateway(ctx, m, addr, a.logger(false), tokenPath != "", opts...)
	if err != nil {
		m.Close()
		if !explicit {
			fmt.Fprintf(a.errOut, "agentmesh: no dashboard: %v\n", err)
			return nil, nil
		}
		return nil, err
	}
	fmt.Fprintf(a.out, "dashboard and API on %s/", srv.url)
	if token != "" {
		fmt.Fprintf(a.out, "?access_token=%s (bearer token in %s)", token, tokenPath)
	}
	fmt.Fprintln(a.out)
	return &dashboard{m: m, srv: srv}, nil
}

// stop shuts the dashboard down; safe on nil and more than once.
func (d *dashboard) stop() {
	if d == nil {
		return
	}
	d.once.Do(func() {
		_ = d.srv.stop()
		d.m.Close()
	})
}

// newToken returns 24 random bytes in hex.
func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// hookSecretEnv is the variable that holds hook name's secret.
func hookSecretEnv(name string) string {
	return "AGENTMESH_HOOK_SECRET_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// hookOptions reads each --hook NAME=FILE, with its secret from getenv.
func hookOptions(hooks []string, getenv func(string) string) ([]gateway.Option, error) {
	var opts []gateway.Option
	for _, h := range hooks {
		name, file, ok := strings.Cut(h, "=")
		if !ok || name == "" || file == "" {
			return nil, usagef("--hook %q: give NAME=FILE, e.g. --hook deploy=deploy.yaml", h)
		}
		if err := gateway.ValidateHookName(name); err != nil {
			return nil, usagef("--hook %q: %v", h, err)
		}
		secret := getenv(hookSecretEnv(name))
		if secret == "" {
			return nil, usagef("--hook %s: no secret: set %s (at least %d bytes, e.g. openssl rand -hex 32)", name, hookSecretEnv(name), gateway.MinHookSecret)
		}
		spec, err := client.LoadPipeline(file)
		if err != nil {
			return nil, fmt.Errorf("--hook %s: %w", name, err)
		}
		opts = append(opts, gateway.WithHook(name, gateway.Hook{Spec: spec, Secret: []byte(secret)}))
	}
	return opts, nil
}
