package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus/bustest"
)

// TestHealthProbes: /healthz answers while the gateway serves; /readyz
// while its NATS connection is up, and 503 naming the state once it is not.
func TestHealthProbes(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw, err := New(ctx, nc, testValidator)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	hs := httptest.NewServer(gw)
	t.Cleanup(hs.Close)
	get := func(path string) (int, string) {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := get(p); code != 200 || strings.TrimSpace(body) != "ok" {
			t.Errorf("%s: %d %q; want 200 ok", p, code, body)
		}
	}
	nc.Close()
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "not ready: nats: CLOSED") {
		t.Errorf("/readyz with the connection closed: %d %q; want 503 naming the state", code, body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz with the connection closed: %d; want 200 (the process serves)", code)
	}
}
