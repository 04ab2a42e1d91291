package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/security"
)

func init() { register(newUpCmd) }

// stackOptions says what `up` and `demo` start.
type stackOptions struct {
	store    string         // JetStream store directory of the embedded server
	host     string         // listen host of the embedded server
	port     int            // listen port; 0 picks a free one
	replicas map[string]int // instances per built-in agent (default 1)
	agents   []string       // which built-in agents; nil means all
	httpPort int            // the embedded server's monitoring port (0 off, -1 a free one)
	metrics  metricsFlags   // up's own endpoint; each child gets one of its own (childMetricsAddrs)
	secure   secureFlags    // --secure: TLS and credentials on the embedded server
	http     string         // the dashboard and API's address ("" none)
}

// stack is a running mesh: the embedded NATS server (unless --nats named an
// existing one), the orchestrator and the built-in agents as child processes.
type stack struct {
	srv *embedded.Server
	sec *security.Server // the secure mode's keys and TLS files, or nil
	// revocations answers 'agentmesh creds revoke' on a secure mesh
	revocations *nats.Conn
	// rollouts stops the embedded server's following of rollouts.
	rollouts func()
	sup      *supervisor
	url      string
	counts   map[string]int
}

// newUpCmd is the up command: long for its help text and flags, which read
// best in one place.
func newUpCmd(a *app) *cobra.Command {
	var (
		opts     stackOptions
		replicas []string
		empty    bool
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run the whole mesh locally: embedded NATS, the orchestrator and every built-in agent",
		Long: `up starts an embedded NATS server with JetStream (data under --store), provisions
the mesh's streams, buckets and object store, then starts one orchestrator and
every built-in agent as child processes of this same binary. A child that
exits is started again after 1s, then after twice as long each time it exits
again within 30s of starting (at most 30s); after 5 such quick exits in a row
up leaves it down and says so. Ctrl-C (or SIGTERM) drains them all, agents
first (in-flight tasks finish), and exits 0.

Unless --empty, up stores the sample images (sunsets, forests, seascapes,
night cities, snow) and documents 'agentmesh demo' uses into an object store
that holds no file yet, so the chat it suggests has something to find; a
store with files (a restart) is left as it is.

With --nats, up uses that NATS server instead of starting one.

up serves the web dashboard and the HTTP API on --http (default
127.0.0.1:8080, printed at start; --http "" for none; see 'agentmesh gateway
--help' and docs/http-api.md). With --secure they need the bearer token up
prints, which acts as admin.

With --metrics-addr HOST:PORT, up serves its own /metrics, /healthz and
/readyz (ready once every agent announced) there and gives each child the
next port: the orchestrator PORT+1, then the agents in the order of the
table up prints (which shows each address). With port 0 every process gets
a free port. --nats-http-port serves the embedded NATS server's own
monitoring endpoint, the one prometheus-nats-exporter reads.

With --secure the embedded server requires TLS and credentials, as
'agentmesh server --secure' does: each child runs as its own identity
(credentials under STORE/secure/creds: orchestrator, agent-<name>), and up
itself as admin. Clients need credentials from 'agentmesh creds'.`,
		Example: `  agentmesh up
  agentmesh up --replicas AnalysisAgent=3 --replicas ImageSearchAgent=2
  agentmesh up --store /var/lib/agentmesh --port 4222
  agentmesh up --secure && agentmesh creds client alice > alice.creds`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := parseReplicas(replicas)
			if err != nil {
				return err
			}
			opts.replicas = r
			a.owner = true
			ctx := cmd.Context()
			pm, err := opts.metrics.start(a, procRole{running: "mesh"})
			if err != nil {
				return err
			}
			defer pm.Close()
			st, err := a.startStack(ctx, opts, a.errOut)
			if err != nil {
				return err
			}
			if !empty {
				if err := a.upSamples(ctx); err != nil {
					_ = st.stop()
					return err
				}
			}
			pm.setRunning()
			a.printStatus(a.out, st)
			dash, err := a.startDashboard(ctx, opts.http, cmd.Flag("http").Changed, dashboardToken(st, opts.store))
			if err != nil {
				_ = st.stop()
				return err
			}
			defer dash.stop()
			env := "NATS_URL=" + st.url
			if st.sec != nil {
				env += fmt.Sprintf(" NATS_CA=%s NATS_CREDS=alice.creds", st.sec.TLS.CA)
				fmt.Fprintf(a.out, "\nsecure: make a client's credentials (and its files bucket) first: agentmesh creds client alice --store %s --nats %s -o alice.creds", opts.store, st.url)
			}
			fmt.Fprintf(a.out, "\nmesh is up on %s; try in another terminal:\n  %s agentmesh agents\n  %s agentmesh chat \"Find sunset images and organize them into folders\"\nCtrl-C stops everything.\n", st.url, env, env)
			select {
			case <-ctx.Done():
				dash.stop()
				fmt.Fprintln(a.errOut, "draining the mesh ...")
			case <-st.sup.allDown():
				_ = st.stop()
				return exitError{code: 1, msg: "up gave up on every process of the mesh (see above why); stopped"}
			}
			if err := st.stop(); err != nil {
				return err
			}
			fmt.Fprintln(a.errOut, "stopped cleanly")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.store, "store", ".agentmesh", "directory of the embedded server's JetStream data")
	f.StringVar(&opts.host, "host", "127.0.0.1", "listen address of the embedded server")
	f.IntVar(&opts.port, "port", 4222, "listen port of the embedded server (0 picks a free port)")
	f.StringArrayVar(&replicas, "replicas", nil, "instances of one agent as NAME=N (repeatable)")
	f.BoolVar(&empty, "empty", false, "start without the sample images and documents (they are stored only into an object store that holds no file)")
	natsHTTPPortFlag(f, &opts.httpPort)
	f.StringVar(&opts.http, "http", defaultHTTP, "serve the dashboard and HTTP API here (HOST:PORT; \"\" for none); see 'agentmesh gateway --help'")
	opts.metrics.register(f)
	opts.secure.register(f)
	return cmd
}

// upSamples stores the samples into a fresh mesh's object store and says so.
func (a *app) upSamples(ctx context.Context) error {
	m, err := a.connect(ctx, "agentmesh up")
	if err != nil {
		return err
	}
	defer m.Close()
	msg, err := seedSamples(ctx, m.Res.Files)
	if err != nil {
		return fmt.Errorf("storing the samples (--empty starts without them): %w", err)
	}
	fmt.Fprintf(a.out, "%s (--empty starts without them)\n", msg)
	return nil
}

// dashboardToken is where up writes the dashboard's bearer token on a
// secure mesh (STORE/secure/gateway.token); "" on a plain one.
func dashboardToken(st *stack, store string) string {
	if st.sec == nil {
		return ""
	}
	return filepath.Join(st.sec.Authority.Dir(), "gateway.token")
}

// parseReplicas reads NAME=N pairs.
func parseReplicas(pairs []string) (map[string]int, error) {
	out := map[string]int{}
	known := builtinNames()
	for _, p := range pairs {
		name, n, ok := strings.Cut(p, "=")
		count, err := strconv.Atoi(n)
		if !ok || err != nil || count < 0 {
			return nil, usagef("--replicas %q: write NAME=N with N a whole number, e.g. AnalysisAgent=3", p)
		}
		if !contains(known, name) {
			return nil, usagef("--replicas %q: no built-in agent %q (known: %s)", p, name, strings.Join(known, ", "))
		}
		out[name] = count
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// startStack starts the server (unless --nats was given), provisions the
// mesh, starts the children and waits until every agent has announced.
//
// It is long because it is the start sequence, one step after another
// (server, identities, children, the wait), each undoing the steps before
// it on failure.
func (a *app) startStack(ctx context.Context, opts stackOptions, log io.Writer) (*stack, error) {
	st := &stack{counts: map[string]int{}}
	st.url = a.natsURL
	if st.url != "" && opts.httpPort != 0 {
		return nil, fmt.Errorf("--nats-http-port %d is the embedded server's monitoring port, and with --nats up starts none: use that server's own --http_port", opts.httpPort)
	}
	if st.url == "" {
		store, err := filepath.Abs(opts.store)
		if err != nil {
			return nil, err
		}
		eopts := embedded.Options{Host: opts.host, Port: opts.port, StoreDir: store, HTTPPort: opts.httpPort}
		sec, err := a.secureServer(&eopts, opts.secure)
		if err != nil {
			return nil, err
		}
		srv, err := embedded.Start(eopts)
		if err != nil {
			return nil, err
		}
		st.srv, st.sec = srv, sec
		st.url = dialURL(srv.URL())
		fmt.Fprintf(log, "embedded NATS with JetStream on %s (data in %s)\n", st.url, store)
		printMonitor(log, srv)
	}
	a.natsURL = st.url
	m, err := a.connect(ctx, "agentmesh up")
	if err != nil {
		st.shutdownServer()
		return nil, err
	}
	if st.sec != nil {
		if err := provisionIssuedClientFiles(ctx, m, st.sec); err != nil {
			m.Close()
			st.shutdownServer()
			return nil, err
		}
		// A connection of its own, which lives as long as the server.
		opts := bus.ConnectOptions{URL: st.url, CredsFile: a.creds, TLSCA: a.tlsCA, Name: "agentmesh up (revocations)"}
		if st.revocations, err = opts.Connect(ctx); err == nil {
			err = a.serveRevocations(st.revocations, st.sec, st.srv)
		}
		if err != nil {
			m.Close()
			st.shutdownServer()
			return nil, err
		}
	}
	defer m.Close()
	if st.srv != nil {
		st.rollouts = a.followRollouts(ctx, st.srv, st.sec, st.revocations, log)
	}

	sup, err := newSupervisor(log, withoutEnv(os.Environ(), envMetricsAddr))
	if err != nil {
		st.shutdownServer()
		return nil, err
	}
	st.sup = sup
	common := []string{"--nats", st.url, "--prefix", a.prefix}
	orchArgs, err := a.childIdentity(st.sec, bus.Identity{Role: bus.RoleOrchestrator})
	if err != nil {
		_ = st.stop()
		return nil, err
	}
	children := []*child{{Name: "orchestrator", Args: append(append([]string{"orchestrator"}, common...), orchArgs...)}}
	names := opts.agents
	if names == nil {
		names = builtinNames()
	}
	for _, name := range names {
		n, ok := opts.replicas[name]
		if !ok {
			n = 1
		}
		st.counts[name] = n
		for i := 1; i <= n; i++ {
			label := name
			if n > 1 {
				label = fmt.Sprintf("%s#%d", name, i)
			}
			idArgs, err := a.childIdentity(st.sec, bus.Identity{Role: bus.RoleAgent, Name: name})
			if err != nil {
				_ = st.stop()
				return nil, err
			}
			children = append(children, &child{Name: label, Args: append(append([]string{"agent", name}, common...), idArgs...)})
		}
	}
	if err := opts.metrics.addChildFlags(children); err != nil {
		_ = st.stop()
		return nil, err
	}
	for _, c := range children {
		if err := sup.start(c); err != nil {
			_ = st.stop()
			return nil, err
		}
	}
	if err := waitForAgents(ctx, m.Res.Agents, st.counts, 60*time.Second); err != nil {
		_ = st.stop()
		return nil, err
	}
	return st, nil
}

// waitForAgents blocks until the registry lists the wanted instance counts.
func waitForAgents(ctx context.Context, kv jetstream.KeyValue, want map[string]int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	reg, err := client.NewRegistry(ctx, kv)
	if err != nil {
		return err
	}
	defer reg.Stop()
	for name, n := range want {
		if n == 0 {
			continue
		}
		if err := reg.Wait(ctx, name, n); err != nil {
			return fmt.Errorf("agent %s did not announce %d instance(s) within %s: %w (see its output above)", name, n, timeout, err)
		}
	}
	return nil
}

func (st *stack) shutdownServer() {
	if st.rollouts != nil {
		st.rollouts()
	}
	if st.revocations != nil {
		st.revocations.Close()
	}
	if st.srv != nil {
		st.srv.Shutdown()
	}
}

// stop drains the children, then shuts the embedded server down.
func (st *stack) stop() error {
	var err error
	if st.sup != nil {
		err = st.sup.stop()
	}
	st.shutdownServer()
	return err
}

// printStatus writes the table of running processes.
func (a *app) printStatus(w io.Writer, st *stack) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	children := st.sup.running()
	withMetrics := len(children) > 0 && flagValue(children[0].Args, "metrics-addr") != ""
	head := "PROCESS\tPID\tSTATUS"
	if withMetrics {
		head += "\tMETRICS"
	}
	fmt.Fprintln(tw, head)
	sort.SliceStable(children, func(i, j int) bool { return children[i].Args[0] > children[j].Args[0] })
	for _, c := range children {
		status := "running"
		if !c.alive() {
			status = "exited"
		}
		line := fmt.Sprintf("%s\t%d\t%s", c.Name, c.pid(), status)
		if withMetrics {
			line += "\thttp://" + flagValue(c.Args, "metrics-addr") + "/metrics"
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
}
