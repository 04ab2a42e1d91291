package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/observe/metrics"
	"github.com/agentmesh/agentmesh/schemas"
)

// envMetricsAddr is the variable --metrics-addr defaults to.
const envMetricsAddr = "AGENTMESH_METRICS_ADDR"

// metricsFlags are --metrics-addr and --pprof, taken by every long-running
// process (server, up, orchestrator, agent).
type metricsFlags struct {
	addr  string
	pprof bool
}

func (mf *metricsFlags) register(f *pflag.FlagSet) {
	f.StringVar(&mf.addr, "metrics-addr", os.Getenv(envMetricsAddr),
		"serve /metrics (Prometheus), /healthz and /readyz on HOST:PORT, e.g. 127.0.0.1:9464 or :9464; port 0 picks a free one (env "+envMetricsAddr+"; default off)")
	f.BoolVar(&mf.pprof, "pprof", false, "also serve the Go profiles under /debug/pprof/ on --metrics-addr")
}

// procMetrics is one process's metrics: its own registry, the observer
// that feeds it (nil when --metrics-addr is off), the endpoint, and the
// readiness facts the process sets as it starts.
type procMetrics struct {
	reg      *prometheus.Registry
	observer *metrics.Observer
	policies *metrics.PolicyCounter // made by the first guard (policyObserver)
	endpoint *metrics.Endpoint
	conn     atomic.Pointer[nats.Conn] // set once connected
	running  atomic.Bool               // set once the process serves
}

// procRole says what a process's endpoint reports.
type procRole struct {
	running string // what /readyz waits for (setRunning), e.g. "consumers"
	// worker: the process connects to NATS (setConn, checked by /readyz)
	// and does the mesh's work, which the observer counts (orchestrator,
	// agent); server and up only export the Go and process metrics.
	worker bool
}

// start serves the endpoint when --metrics-addr is set, before the process
// connects, so /healthz answers at once and /readyz once the role's
// conditions hold. It returns a procMetrics that does nothing when the flag
// is off.
func (mf *metricsFlags) start(a *app, role procRole) (*procMetrics, error) {
	pm := &procMetrics{}
	var checks []metrics.Check
	if role.worker {
		checks = append(checks, metrics.Check{Name: "nats", Func: pm.natsReady})
	}
	checks = append(checks, metrics.Check{Name: role.running, Func: func() error {
		if !pm.running.Load() {
			return errors.New("not running yet")
		}
		return nil
	}})
	if mf.addr == "" {
		if mf.pprof {
			return nil, errors.New("--pprof serves the profiles on the metrics endpoint: give --metrics-addr HOST:PORT too")
		}
		return pm, nil
	}
	if err := metrics.CheckAddr(mf.addr); err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	pm.reg = metrics.NewRegistry()
	if role.worker {
		obs, err := metrics.New(pm.reg)
		if err != nil {
			return nil, err
		}
		pm.observer = obs
	}
	var err error
	if pm.endpoint, err = metrics.Serve(mf.addr, pm.reg, metrics.WithReadiness(checks...), metrics.WithPprof(mf.pprof)); err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	u := pm.endpoint.URL()
	fmt.Fprintf(a.errOut, "metrics on %s/metrics (health %s/healthz, readiness %s/readyz)\n", u, u, u)
	return pm, nil
}

// setConn tells readiness the process is connected on nc.
func (pm *procMetrics) setConn(nc *nats.Conn) { pm.conn.Store(nc) }

// setRunning tells readiness the process serves.
func (pm *procMetrics) setRunning() { pm.running.Store(true) }

func (pm *procMetrics) natsReady() error {
	nc := pm.conn.Load()
	if nc == nil {
		return errors.New("not connected yet")
	}
	if s := nc.Status(); s != nats.CONNECTED {
		return fmt.Errorf("connection is %s", s)
	}
	return nil
}

// Observer is what the process hangs on the observer seam: the metrics
// observer, or nothing when metrics are off.
func (pm *procMetrics) Observer() schemas.Observer {
	if pm.observer == nil {
		return nil
	}
	return pm.observer
}

// policyObserver returns the options that count a guard's decisions on
// the endpoint (agentmesh_policy_decisions_total), none when metrics are
// off. Every guard of the process shares one counter.
func (pm *procMetrics) policyObserver() ([]llm.GuardOption, error) {
	if pm == nil || pm.reg == nil {
		return nil, nil
	}
	if pm.policies == nil {
		c, err := metrics.NewPolicyCounter(pm.reg)
		if err != nil {
			return nil, err
		}
		pm.policies = c
	}
	return []llm.GuardOption{llm.WithPolicyObserver(pm.policies.Observe)}, nil
}

// register adds a collector when metrics are on.
func (pm *procMetrics) register(c prometheus.Collector) error {
	if pm.reg == nil {
		return nil
	}
	return pm.reg.Register(c)
}

// Close stops the endpoint; safe when metrics are off and twice.
func (pm *procMetrics) Close() {
	if pm != nil {
		_ = pm.endpoint.Close()
	}
}

// childMetricsAddrs returns the metrics addresses up gives its n children
// (the orchestrator first, then the agents in the order they start) when up
// itself serves on addr: the ports after up's own, one each; when addr's
// port is 0, a free port each, picked now so that up can show it.
func childMetricsAddrs(addr string, n int) ([]string, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", metrics.CheckAddr(addr))
	}
	port, _ := strconv.Atoi(p)
	if port+n > 65535 {
		return nil, fmt.Errorf("--metrics-addr %s: up serves its %d processes on the %d ports after %d, past 65535: pick a lower port", addr, n, n, port)
	}
	out := make([]string, n)
	for i := range out {
		if port != 0 {
			out[i] = net.JoinHostPort(host, strconv.Itoa(port+1+i))
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("--metrics-addr %s: finding a free port for a child: %w", addr, err)
		}
		out[i] = ln.Addr().String()
		_ = ln.Close()
	}
	return out, nil
}

// withoutEnv returns env less the variable key, so that children that get
// an explicit flag do not also read the variable.
func withoutEnv(env []string, key string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// flagValue returns the value of --name in args ("" when absent).
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// addChildFlags gives each of up's children (the orchestrator first) its
// own --metrics-addr, and --pprof when up has it; nothing when up serves no
// metrics.
func (mf *metricsFlags) addChildFlags(children []*child) error {
	if mf.addr == "" {
		return nil
	}
	addrs, err := childMetricsAddrs(mf.addr, len(children))
	if err != nil {
		return err
	}
	for i, c := range children {
		c.Args = append(c.Args, "--metrics-addr", addrs[i])
		if mf.pprof {
			c.Args = append(c.Args, "--pprof")
		}
	}
	return nil
}

// natsHTTPPortFlag registers --nats-http-port, the embedded server's
// monitoring port, for server and up.
func natsHTTPPortFlag(f *pflag.FlagSet, port *int) {
	f.IntVar(port, "nats-http-port", 0, "serve the embedded NATS server's own monitoring endpoint (/varz, /jsz, /healthz: what prometheus-nats-exporter reads) on this port of the listen address, like nats-server --http_port; 0 off, -1 a free port")
}

// printMonitor says where the embedded server's monitoring endpoint is,
// when it serves one.
func printMonitor(w io.Writer, srv *embedded.Server) {
	if u := srv.MonitorURL(); u != "" {
		fmt.Fprintf(w, "NATS monitoring on %s (/varz, /jsz, /connz, /healthz; point prometheus-nats-exporter at it)\n", u)
	}
}
