package metrics_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/observe/metrics"
	"github.com/agentmesh/agentmesh/observe/metrics/metricstest"
	"github.com/agentmesh/agentmesh/schemas"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The endpoint serves the registry in the text format the official parser
// reads, with the Go and process collectors; /healthz answers while it
// serves; /readyz names each failing check; pprof only when asked.
func TestEndpoint(t *testing.T) {
	reg := metrics.NewRegistry()
	o, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	o.Observe(context.Background(), schemas.ChatTurnEnded{State: schemas.ChatCompleted})
	connected := errors.New("not connected")
	e, err := metrics.Serve("127.0.0.1:0", reg, metrics.WithReadiness(
		metrics.Check{Name: "nats", Func: func() error { return connected }},
		metrics.Check{Name: "consumers", Func: func() error { return nil }}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })

	fams := metricstest.Scrape(t, e.URL()+"/metrics")
	if got := fams.Value("agentmesh_chat_turns_total", "outcome", "completed"); got != 1 {
		t.Errorf("chat turns = %v, want 1\n%s", got, fams.Series("agentmesh_chat_turns_total"))
	}
	for _, name := range []string{"go_goroutines", "process_start_time_seconds"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("no %s: the Go and process collectors are missing", name)
		}
	}
	if code, body := get(t, e.URL()+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, e.URL()+"/readyz"); code != 503 || !strings.Contains(body, "nats: not connected") || strings.Contains(body, "consumers") {
		t.Errorf("/readyz while NATS is down: %d %q, want 503 naming nats only", code, body)
	}
	connected = nil
	if code, body := get(t, e.URL()+"/readyz"); code != 200 {
		t.Errorf("/readyz once connected: %d %q", code, body)
	}
	if code, body := get(t, e.URL()+"/debug/pprof/"); code != 404 || !strings.Contains(body, "--pprof") {
		t.Errorf("/debug/pprof/ without pprof: %d %q, want 404 saying how to turn it on", code, body)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	p, err := metrics.Serve("127.0.0.1:0", reg, metrics.WithPprof(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if code, body := get(t, p.URL()+"/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ with pprof: %d", code)
	}
}

// A bad address is refused with the value and the form to use; a taken
// port says so.
func TestEndpointBadAddr(t *testing.T) {
	reg := metrics.NewRegistry()
	for _, addr := range []string{"9464", "localhost", "127.0.0.1:http-ish", "127.0.0.1:70000", "a b:1", ""} {
		_, err := metrics.Serve(addr, reg)
		if err == nil || !strings.Contains(err.Error(), `"`+addr+`"`) || !strings.Contains(err.Error(), "HOST:PORT") {
			t.Errorf("Serve(%q): err = %v, want one naming the value and HOST:PORT", addr, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := metrics.Serve(ln.Addr().String(), reg); err == nil || !strings.Contains(err.Error(), "cannot listen") {
		t.Errorf("Serve on a taken port: err = %v", err)
	}
}

// CheckAddr takes what an operator types: it never panics, and what it
// accepts is a HOST:PORT the network package splits with a port in range.
func FuzzCheckAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1:9464", ":0", "[::1]:9464", "9464", "host:port", "a b:1", "127.0.0.1:70000", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		if metrics.CheckAddr(addr) != nil {
			return
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("CheckAddr(%q) accepted what SplitHostPort refuses: %v", addr, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			t.Fatalf("CheckAddr(%q) accepted port %q", addr, port)
		}
	})
}
