package main

import (
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/proctest"
)

// wantBrowserRefusals checks that a POST of body to url as a page of
// another site would send it, and a request naming a rebound Host, are
// refused with 403 before the server acts on them.
func wantBrowserRefusals(t *testing.T, url, body string) {
	t.Helper()
	for _, c := range []struct {
		what   string
		header []string
		host   string
	}{
		{"a form-like POST from another site", []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site", "Content-Type", "text/plain"}, ""},
		{"a JSON POST from another port", []string{"Origin", "http://127.0.0.1:1", "Content-Type", "application/json"}, ""},
		{"a POST for a rebound name", []string{"Content-Type", "application/json"}, "rebound.evil.example"},
	} {
		req, err := http.NewRequest("POST", url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(c.header); i += 2 {
			req.Header.Set(c.header[i], c.header[i+1])
		}
		if c.host != "" {
			req.Host = c.host
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s to %s: %d %s, want 403", c.what, url, resp.StatusCode, b)
		}
	}
}

// TestA2ABridgeRefusesBrowserForgeries runs 'agentmesh a2a --http' as a
// process: it refuses what a page of another site could make a browser
// send (the checks the gateway makes), and takes the host of its
// --base-url. (TestMCPServerOverHTTP checks 'agentmesh mcp --http'.)
func TestA2ABridgeRefusesBrowserForgeries(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	bin := agentBinary(t)
	a2aProc := proctest.Start(t, exec.Command(bin, "a2a", "--http", "127.0.0.1:0", "--nats", srv.URL(), "--base-url", "https://mesh.example.com"),
		regexp.MustCompile(`serving A2A 1\.0 on (http://\S+)`))
	base := a2aProc.WaitReady(t)[1]
	wantBrowserRefusals(t, base+"/a2a/chat", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","parts":[{"text":"pwned"}],"messageId":"m1"}}}`)
	req, err := http.NewRequest("GET", base+"/.well-known/agent-card.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "mesh.example.com"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the card for the --base-url host: %d", resp.StatusCode)
	}
}
