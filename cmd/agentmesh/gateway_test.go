package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/proctest"
)

var dashboardURL = regexp.MustCompile(`dashboard and API on (http://[^/\s]+)/(?:\?access_token=(\S+))?`)

// httpJSON sends a request and decodes a JSON answer into v (when not nil).
func httpJSON(t *testing.T, method, url, token, contentType string, body io.Reader, v any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if v != nil && json.Unmarshal(raw, v) != nil {
		t.Fatalf("%s %s: %d, not JSON: %s", method, url, resp.StatusCode, raw)
	}
	return resp.StatusCode
}

// TestUpServesTheAPI starts `agentmesh up` as its own process with the
// dashboard on a free port, lists the built-in agents over HTTP, runs the
// sunsets pipeline from examples/ through the API to its end, and stops up
// with Ctrl-C.
func TestUpServesTheAPI(t *testing.T) {
	bin := agentBinary(t)
	up := startUp(t, bin, "--http", "127.0.0.1:0")
	m := dashboardURL.FindStringSubmatch(up.output())
	if m == nil {
		t.Fatalf("up printed no dashboard address:\n%s", up.output())
	}
	base := m[1]
	var agents []struct {
		Name      string            `json:"name"`
		Instances []json.RawMessage `json:"instances"`
	}
	if code := httpJSON(t, "GET", base+"/api/agents", "", "", nil, &agents); code != 200 || len(agents) != len(builtinNames()) {
		t.Fatalf("GET /api/agents: %d, %d agents, want %d", code, len(agents), len(builtinNames()))
	}
	resp, err := http.Get(base + "/")
	if err != nil || resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %v %v", resp, err)
	}
	resp.Body.Close()
	// The A2A bridge is mounted beside the API: the chat's card at the
	// well-known path, and a card for TextAgent under /a2a/agents/ (a
	// request without A2A-Version gets the 0.3 card, whose endpoint is url).
	var card struct {
		Name string `json:"name"`
		URL  string `json:"url"`
	}
	if code := httpJSON(t, "GET", base+"/.well-known/agent-card.json", "", "", nil, &card); code != 200 || card.Name != "agentmesh" || !strings.HasSuffix(card.URL, "/a2a/chat") {
		t.Fatalf("GET /.well-known/agent-card.json: %d %+v", code, card)
	}
	if code := httpJSON(t, "GET", base+"/a2a/agents/TextAgent/.well-known/agent-card.json", "", "", nil, &card); code != 200 || card.Name != "TextAgent" {
		t.Fatalf("TextAgent's A2A card: %d %+v", code, card)
	}

	runSunsetsOverAPI(t, base, stringer(up.output))
	if err := up.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := up.wait(60 * time.Second); err != nil {
		t.Fatalf("up did not exit 0 after Ctrl-C: %v\n%s", err, up.output())
	}
	if _, err := http.Get(base + "/api/agents"); err == nil {
		t.Fatal("the API still answers after up stopped")
	}
}

// runSunsetsOverAPI posts examples/pipelines/sunsets.yaml to the API at
// base, follows the run's event stream to its end and checks that the run
// completed; logs go with a failure.
func runSunsetsOverAPI(t *testing.T, base string, logs fmt.Stringer) {
	t.Helper()
	spec, err := os.Open("../../examples/pipelines/sunsets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer spec.Close()
	var acc struct {
		RunID string `json:"run_id"`
	}
	if code := httpJSON(t, "POST", base+"/api/pipelines", "", "application/yaml", spec, &acc); code != 202 || acc.RunID == "" {
		t.Fatalf("POST /api/pipelines: %d %+v", code, acc)
	}
	// The run's event stream ends with the run's end.
	resp, err := http.Get(base + "/api/runs/" + acc.RunID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event: io.agentmesh.pipeline.completed") {
				ended <- sc.Text()
				return
			}
		}
	}()
	select {
	case <-ended:
	case <-time.After(60 * time.Second):
		t.Fatalf("the run did not end within 60s:\n%s", logs)
	}
	var run struct {
		Status string `json:"status"`
	}
	if code := httpJSON(t, "GET", base+"/api/runs/"+acc.RunID, "", "", nil, &run); code != 200 || run.Status != "completed" {
		t.Fatalf("GET run: %d %+v", code, run)
	}
}

// TestGatewayProcessOnSecureMesh runs `agentmesh gateway` as its own
// process against `agentmesh server --secure`, connected as a client, with
// a token file mapping one token to the client's credentials and one to
// admin's: the server's permissions follow each token.
func TestGatewayProcessOnSecureMesh(t *testing.T) {
	credsDir := t.TempDir()
	url, store := startSecureServer(t, "--creds-dir", credsDir)
	ca := filepath.Join(credsDir, "ca.pem")
	alice := issueCreds(t, store, "client", "alice", "--nats", url) // and her files bucket, which the gateway opens
	admin := issueCreds(t, store, "admin")
	tokens := filepath.Join(t.TempDir(), "tokens")
	const clientTok, adminTok = "alice-token-0123456789abcdef", "admin-token-0123456789abcdef"
	if err := os.WriteFile(tokens, []byte("# who may use the gateway\n"+clientTok+" "+alice+"\n"+adminTok+" "+admin+"  # the operator\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(agentBinary(t), "gateway", "--nats", url, "--tls-ca", ca, "--creds", alice, "--token-file", tokens, "--http", "127.0.0.1:0")
	cmd.Env = cleanEnv()
	p := proctest.Start(t, cmd, dashboardURL)
	base := p.WaitReady(t)[1]
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	if code := httpJSON(t, "GET", base+"/api/agents", "", "", nil, &e); code != 401 || e.Error.Code != "unauthorized" {
		t.Fatalf("no token: %d %+v", code, e)
	}
	if code := httpJSON(t, "GET", base+"/api/agents", clientTok, "", nil, nil); code != 200 {
		t.Fatalf("client token, agents: %d", code)
	}
	if code := httpJSON(t, "GET", base+"/api/runs", clientTok, "", nil, &e); code != 403 || e.Error.Code != "forbidden" {
		t.Fatalf("client token, runs: %d %+v", code, e)
	}
	if code := httpJSON(t, "GET", base+"/api/runs", adminTok, "", nil, nil); code != 200 {
		t.Fatalf("admin token, runs: %d", code)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
		if err := p.Err(); err != nil {
			t.Fatalf("gateway exit after SIGTERM: %v: %s", err, p.Stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("gateway did not stop after SIGTERM")
	}
}

// TestTokenFileErrors checks the messages of a bad token file.
func TestTokenFileErrors(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "x.creds")
	if err := os.WriteFile(creds, []byte("not credentials"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ content, want string }{
		{"", "holds no tokens"},
		{"# only a comment\n", "holds no tokens"},
		{"short x.creds\n", "use at least 16"},
		{"a-long-enough-token-1234\n", "two fields"},
		{"a-long-enough-token-1234 x.creds extra\n", "two fields"},
		{"a-long-enough-token-1234 missing.creds\n", "missing.creds"},
		{"a-long-enough-token-1234 x.creds\na-long-enough-token-1234 x.creds\n", "line 2: the token of line 1 again"},
	} {
		path := filepath.Join(dir, "tokens")
		if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := readTokenFile(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("token file %q: error %v, want one saying %q", c.content, err, c.want)
		}
	}
	path := filepath.Join(dir, "tokens")
	_ = os.WriteFile(path, []byte("a-long-enough-token-1234   x.creds   # comment\n\n"), 0o600)
	entries, err := readTokenFile(path)
	if err != nil || len(entries) != 1 || entries[0].creds != creds {
		t.Fatalf("good token file: %+v %v", entries, err)
	}
}

// FuzzTokenFile feeds token files to their parser: each line it accepts
// has a token of at least minTokenLen characters, given once.
func FuzzTokenFile(f *testing.F) {
	f.Add("a-long-enough-token-1234 x.creds\n")
	f.Add("# c\n\nshort x\n")
	f.Add("a-long-enough-token-1234 /abs/x.creds # c\nb-long-enough-token-1234 x.creds")
	dir := f.TempDir()
	path := filepath.Join(dir, "tokens")
	_ = os.WriteFile(filepath.Join(dir, "x.creds"), []byte("x"), 0o600)
	f.Fuzz(func(t *testing.T, content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		entries, err := readTokenFile(path)
		if err != nil {
			if !strings.Contains(err.Error(), "--token-file") {
				t.Fatalf("error does not name the flag: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, e := range entries {
			if len(e.token) < minTokenLen || seen[e.token] || strings.ContainsAny(e.token, " \t#") {
				t.Fatalf("accepted token %q in %q", e.token, content)
			}
			seen[e.token] = true
		}
	})
}

// TestUpSecureDashboardNeedsItsToken starts `agentmesh up --secure`: its
// dashboard requires the bearer token up prints and writes to
// STORE/secure/gateway.token, and acts as admin with it.
func TestUpSecureDashboardNeedsItsToken(t *testing.T) {
	up := startUp(t, agentBinary(t), "--secure", "--http", "127.0.0.1:0")
	m := dashboardURL.FindStringSubmatch(up.output())
	if m == nil || m[2] == "" {
		t.Fatalf("up --secure printed no dashboard address with a token:\n%s", up.output())
	}
	base, token := m[1], m[2]
	if code := httpJSON(t, "GET", base+"/api/runs", "", "", nil, nil); code != 401 {
		t.Fatalf("without the token: %d", code)
	}
	var runs []json.RawMessage
	if code := httpJSON(t, "GET", base+"/api/runs", token, "", nil, &runs); code != 200 {
		t.Fatalf("with the token: %d", code)
	}
	var agents []json.RawMessage
	if code := httpJSON(t, "GET", base+"/api/agents", token, "", nil, &agents); code != 200 || len(agents) != len(builtinNames()) {
		t.Fatalf("agents with the token: %d, %d agents", code, len(agents))
	}
	// A token in the address is taken on event streams only.
	if code := httpJSON(t, "GET", base+"/api/agents?access_token="+token, "", "", nil, nil); code != 401 {
		t.Fatalf("agents with access_token: %d, want 401", code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/events?access_token="+token, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("events with access_token: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// The A2A bridge checks no credentials, so a gateway with tokens does
	// not serve it.
	if code := httpJSON(t, "GET", base+"/.well-known/agent-card.json", token, "", nil, nil); code != 404 {
		t.Fatalf("a secure gateway serves the A2A card: %d, want 404", code)
	}
}
