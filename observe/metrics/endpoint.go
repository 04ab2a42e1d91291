package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a registry of its own for one process, holding the
// Go runtime and process collectors. The mesh never uses the global
// registry: two meshes in one process (tests, embedded.StartLocal) stay apart.
func NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Check is one readiness condition: nil when it holds, else why not.
type Check struct {
	Name string
	Func func() error
}

// EndpointOption configures an Endpoint.
type EndpointOption func(*endpointConfig)

type endpointConfig struct {
	checks []Check
	pprof  bool
}

// WithReadiness adds conditions /readyz checks, in order (for example
// "nats": connected; "consumers": running).
func WithReadiness(checks ...Check) EndpointOption {
	return func(c *endpointConfig) { c.checks = append(c.checks, checks...) }
}

// WithPprof serves the runtime profiles under /debug/pprof/ too. Off by
// default: profiles show the process's internals to whoever reaches the
// address.
func WithPprof(on bool) EndpointOption { return func(c *endpointConfig) { c.pprof = on } }

// Endpoint is the HTTP endpoint of one process: /metrics in the Prometheus
// text format (or what the scraper negotiates), /healthz (200 while the
// process serves), /readyz (200 when every readiness check holds, 503 with
// the failing ones otherwise) and, with WithPprof, /debug/pprof/.
type Endpoint struct {
	ln        net.Listener
	srv       *http.Server
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// CheckAddr reports whether addr is a HOST:PORT the endpoint can listen on
// (HOST may be empty for every interface; PORT 0 picks a free one).
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		var n int
		n, err = strconv.Atoi(port)
		if err == nil && (n < 0 || n > 65535) {
			err = fmt.Errorf("port %d is out of range 0-65535", n)
		}
	}
	if err == nil && strings.ContainsAny(host, " /") {
		err = fmt.Errorf("host %q is not a host name or IP address", host)
	}
	if err != nil {
		return fmt.Errorf("metrics address %q: %v: write HOST:PORT, e.g. 127.0.0.1:9464, :9464 for every interface, or 127.0.0.1:0 for a free port", addr, err)
	}
	return nil
}

// Serve listens on addr (see CheckAddr) and serves g there in the
// background until Close. Options: WithReadiness, WithPprof.
func Serve(addr string, g prometheus.Gatherer, opts ...EndpointOption) (*Endpoint, error) {
	if err := CheckAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address %s: cannot listen: %w: stop what uses it, pick another port, or use port 0 for a free one", addr, err)
	}
	e := &Endpoint{ln: ln, done: make(chan struct{}),
		srv: &http.Server{Handler: Handler(g, opts...), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(e.done)
		_ = e.srv.Serve(ln)
	}()
	return e, nil
}

// Handler is the endpoint's handler alone, for a caller that runs its own
// HTTP server. Options: WithReadiness, WithPprof.
func Handler(g prometheus.Gatherer, opts ...EndpointOption) http.Handler {
	var cfg endpointConfig
	for _, o := range opts {
		o(&cfg)
	}
	hopts := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}
	if r, ok := g.(prometheus.Registerer); ok {
		hopts.Registry = r
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, hopts))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		var failed []string
		for _, c := range cfg.checks {
			if err := c.Func(); err != nil {
				failed = append(failed, c.Name+": "+err.Error())
			}
		}
		if len(failed) > 0 {
			http.Error(w, "not ready\n"+strings.Join(failed, "\n"), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if cfg.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	} else {
		mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "profiling is off on this process: start it with --pprof to serve /debug/pprof/", http.StatusNotFound)
		})
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "agentmesh: /metrics /healthz /readyz"+map[bool]string{true: " /debug/pprof/"}[cfg.pprof])
	})
	return mux
}

// Addr returns the address the endpoint listens on, with the port it got
// when it was asked for port 0.
func (e *Endpoint) Addr() string { return e.ln.Addr().String() }

// URL returns http://ADDR.
func (e *Endpoint) URL() string { return "http://" + e.Addr() }

// Close stops serving, letting requests in hand finish for up to 5s. It is
// safe to call twice.
func (e *Endpoint) Close() error {
	if e == nil {
		return nil
	}
	e.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.closeErr = err
		}
		<-e.done
	})
	return e.closeErr
}
