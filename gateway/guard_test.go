package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// gateSpec is a run that waits for a person: what a forged approve, input
// or cancel would move.
const gateSpec = `name: gate
steps:
  - {id: review, kind: approval, timeout_ms: 600000, human: {prompt: "Ship?", default: reject}}
  - {id: title, kind: input, depends_on: [review], timeout_ms: 600000, human: {prompt: "Title?"}}
`

// startGate submits gateSpec as run id and waits until it waits for its
// approval.
func (m *testMesh) startGate(t *testing.T, id string) {
	t.Helper()
	events := m.openSSE(t, "/api/runs/"+id+"/events")
	if r := m.do(t, "POST", "/api/pipelines?run_id="+id, "application/yaml", []byte(gateSpec)); r.status != 202 {
		t.Fatalf("submit %s: %d %s", id, r.status, clip(r.body))
	}
	waitEvent(t, events, "io.agentmesh.pipeline.step.waiting", func(ev sseEvent) bool { return ev.Data["stepid"] == "review" })
}

// effects is what a request that the gateway took would have changed on
// the mesh: the last sequence of the requests stream (pipelines, chat) and
// of the tasks stream, the files stored, and the gate run's state.
type effects struct {
	requests, tasks uint64
	files           int
	gate            string
}

func (m *testMesh) effects(t *testing.T, gate string) effects {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var e effects
	ri, err := m.res.Requests.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ti, err := m.res.Tasks.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.requests, e.tasks = ri.State.LastSeq, ti.State.LastSeq
	refs, err := m.gw.def.files.Select(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	e.files = len(refs)
	var run struct {
		Status string                    `json:"status"`
		Steps  map[string]map[string]any `json:"steps"`
	}
	decode(t, m.getJSON(t, "/api/runs/"+gate), &run)
	e.gate = fmt.Sprintf("%s review=%v title=%v", run.Status, run.Steps["review"]["status"], run.Steps["title"]["status"])
	return e
}

// forgery is a request a page of another site can have a browser send
// without asking the gateway first (a CORS "simple" request: a form, or
// fetch with mode no-cors).
type forgery struct {
	method, path, contentType, body string
}

// forgeries against the run gate, each state-changing endpoint with each
// body a form or no-cors fetch can carry.
func forgeries(gate string) []forgery {
	const form, text, multi = "application/x-www-form-urlencoded", "text/plain;charset=UTF-8", "multipart/form-data; boundary=X"
	task := `{"inputs":{"text":{"data_type":"TEXT","value":"pwned"}},"params":{"op":"upper"}}`
	pipe := "name: forged\nsteps:\n  - {id: a, agent: TextAgent, params: {op: upper}, inputs: {text: \"text:pwned\"}}\n"
	multiBody := "--X\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.txt\"\r\n\r\npwned\r\n--X--\r\n"
	var out []forgery
	for _, ct := range []string{text, form, ""} {
		out = append(out,
			forgery{"POST", "/api/agents/TextAgent/tasks", ct, task},
			forgery{"POST", "/api/chat", ct, `{"message":"pwned"}`},
			forgery{"POST", "/api/pipelines", ct, pipe},
			forgery{"POST", "/api/runs/" + gate + "/steps/review/approve", ct, `{"comment":"pwned"}`},
			forgery{"POST", "/api/runs/" + gate + "/steps/review/input", ct, `{"value":"pwned"}`},
		)
	}
	return append(out,
		forgery{"POST", "/api/agents/TextAgent/tasks", multi, multiBody},
		forgery{"POST", "/api/chat", multi, multiBody},
		forgery{"POST", "/api/pipelines", multi, multiBody},
		forgery{"POST", "/api/files?name=x.txt", text, "pwned"},
		forgery{"POST", "/api/files", multi, multiBody},
		forgery{"POST", "/api/runs/" + gate + "/cancel", "", ""},
		forgery{"POST", "/api/runs/" + gate + "/cancel", text, "x"},
	)
}

// TestCrossSiteRequestsRefused sends every forgery as a browser sends it
// from another site (Origin and Sec-Fetch-Site naming that site): each is
// refused with 403 cross_origin, even with a JSON body, and nothing on the
// mesh changes. The dashboard's own requests still pass.
func TestCrossSiteRequestsRefused(t *testing.T) {
	m := newTestMesh(t)
	m.startGate(t, "gate-1")
	before := m.effects(t, "gate-1")
	for _, from := range [][]string{
		{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"},
		{"Origin", "http://evil.example"},                               // a browser that sends no Sec-Fetch-Site
		{"Sec-Fetch-Site", "same-site", "Origin", "http://127.0.0.1:1"}, // another port of this machine
		{"Origin", "null"}, // a sandboxed frame, a data: page
	} {
		for _, f := range forgeries("gate-1") {
			for _, ct := range []string{f.contentType, "application/json"} {
				r := m.do(t, f.method, f.path, ct, []byte(f.body), from...)
				what := fmt.Sprintf("%s %s (%s) with %v", f.method, f.path, ct, from)
				msg := wantError(t, what, r, 403, CodeCrossOrigin)
				if !strings.Contains(msg, "other sites") {
					t.Fatalf("%s: the refusal does not say why: %s", what, msg)
				}
			}
		}
	}
	// A mounted handler (the A2A bridge) is behind the same check.
	m.gw.Handle("/a2a/", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("a cross-site request reached a mounted handler")
	}))
	wantError(t, "mounted handler", m.do(t, "POST", "/a2a/chat", "text/plain", []byte(`{"jsonrpc":"2.0"}`), "Origin", "http://evil.example"), 403, CodeCrossOrigin)
	if after := m.effects(t, "gate-1"); after != before {
		t.Fatalf("cross-site requests changed the mesh: before %+v, after %+v", before, after)
	}

	// The dashboard's own pages: same origin, JSON.
	for _, own := range [][]string{{"Origin", m.http.URL, "Sec-Fetch-Site", "same-origin"}, {"Origin", m.http.URL}, {"Sec-Fetch-Site", "none"}} {
		r := m.do(t, "POST", "/api/chat", "application/json", []byte(`{"message":"hello"}`), own...)
		if r.status != http.StatusAccepted {
			t.Fatalf("the dashboard's chat with %v: %d %s", own, r.status, clip(r.body))
		}
	}
	// Reads are not refused: a page of another site cannot read the answer.
	if r := m.do(t, "GET", "/api/agents", "", nil, "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"); r.status != 200 {
		t.Fatalf("a cross-site read: %d", r.status)
	}
}

// TestSimpleBodiesRefused sends every forgery's body type without the
// headers a browser adds (as a browser without Origin would): the JSON and
// pipeline endpoints take application/json (and YAML for pipelines) only,
// so each is refused with 415 before it does anything.
func TestSimpleBodiesRefused(t *testing.T) {
	m := newTestMesh(t)
	m.startGate(t, "gate-2")
	before := m.effects(t, "gate-2")
	for _, f := range forgeries("gate-2") {
		if strings.Contains(f.path, "/files") || strings.HasSuffix(f.path, "/cancel") {
			continue // an upload takes any media type; cancel takes no body: both rely on the origin check
		}
		r := m.do(t, f.method, f.path, f.contentType, []byte(f.body))
		what := fmt.Sprintf("%s %s (%q)", f.method, f.path, f.contentType)
		msg := wantError(t, what, r, http.StatusUnsupportedMediaType, schemas.CodeInvalidRequest)
		if !strings.Contains(msg, "application/json") {
			t.Fatalf("%s: the refusal does not say what to send: %s", what, msg)
		}
	}
	if after := m.effects(t, "gate-2"); after != before {
		t.Fatalf("simple requests changed the mesh: before %+v, after %+v", before, after)
	}
	// The documented types still work.
	if r := m.do(t, "POST", "/api/pipelines/validate", "application/x-yaml", []byte(gateSpec)); r.status != 200 {
		t.Fatalf("a YAML pipeline: %d %s", r.status, clip(r.body))
	}
	if r := m.do(t, "POST", "/api/chat", "application/json; charset=utf-8", []byte(`{"message":"hi"}`)); r.status != 202 {
		t.Fatalf("JSON with a charset: %d %s", r.status, clip(r.body))
	}
}

// TestForeignHostRefused checks DNS rebinding: a gateway reached on a
// loopback address answers only for loopback names.
func TestForeignHostRefused(t *testing.T) {
	m := newTestMesh(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(m.http.URL, "http://"))
	for _, p := range []string{"/", "/api/agents", "/app.js"} {
		r := m.do(t, "GET", p, "", nil, "Host", "rebound.evil.example:"+port)
		wantError(t, "GET "+p+" for a foreign Host", r, 403, CodeForeignHost)
		for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port} {
			if r := m.do(t, "GET", p, "", nil, "Host", host); r.status != 200 {
				t.Fatalf("GET %s for %s: %d", p, host, r.status)
			}
		}
	}
	r := m.do(t, "POST", "/api/chat", "application/json", []byte(`{"message":"hi"}`), "Host", "rebound.evil.example")
	wantError(t, "POST for a foreign Host", r, 403, CodeForeignHost)

	// Behind a proxy on this machine that passes the users' Host on.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := New(ctx, m.srv.Conn(t), testValidator, WithHosts("https://mesh.example.com")); err == nil {
		t.Fatal("WithHosts took a URL")
	}
	gw, err := New(ctx, m.srv.Conn(t), testValidator, WithHosts("mesh.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	proxied := &testMesh{spec: m.spec, http: httptest.NewServer(gw)}
	t.Cleanup(proxied.http.Close)
	if r := proxied.do(t, "GET", "/api/agents", "", nil, "Host", "mesh.example.com"); r.status != 200 {
		t.Fatalf("GET for an allowed host: %d %s", r.status, clip(r.body))
	}
	r = proxied.do(t, "POST", "/api/chat", "application/json", []byte(`{"message":"hi"}`), "Origin", "https://mesh.example.com")
	if r.status != http.StatusAccepted {
		t.Fatalf("POST from the allowed host's page through a proxy that rewrites Host: %d %s", r.status, clip(r.body))
	}
	wantError(t, "GET for another host", proxied.do(t, "GET", "/api/agents", "", nil, "Host", "rebound.evil.example"), 403, CodeForeignHost)
}

// TestHeaderLimit sends a 1 MB header: the server the gateway gives
// (Server) does not read it whole, and the handler refuses headers over
// its limit in any server.
func TestHeaderLimit(t *testing.T) {
	m := newTestMesh(t, WithMaxHeader(16<<10))
	big := strings.Repeat("a", 1<<20)
	// The handler, in a server with Go's default 1 MB limit.
	r := m.do(t, "GET", "/api/agents", "", nil, "X-Big", big[:20<<10])
	wantError(t, "a 20 KiB header", r, http.StatusRequestHeaderFieldsTooLarge, schemas.CodeTooLarge)
	if r := m.do(t, "GET", "/api/agents", "", nil, "X-Small", big[:8<<10]); r.status != 200 {
		t.Fatalf("an 8 KiB header: %d", r.status)
	}
	// The gateway's own server.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := m.gw.Server()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	if srv.MaxHeaderBytes != 16<<10 || srv.ReadHeaderTimeout == 0 {
		t.Fatalf("server limits: %d bytes, %s", srv.MaxHeaderBytes, srv.ReadHeaderTimeout)
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() { // the server answers, and closes, before all of it is sent
		_, _ = fmt.Fprintf(c, "GET /api/agents HTTP/1.1\r\nHost: %s\r\nX-Big: %s\r\n\r\n", ln.Addr(), big)
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a 1 MB header: %d, want 431", resp.StatusCode)
	}
}

// TestSubPipelineFileRefused posts pipelines with a sub-pipeline given by
// file, at the top and nested in an inline one: validate and submit refuse
// both alike (the gateway reads no file for a client), naming the file,
// and nothing is submitted.
func TestSubPipelineFileRefused(t *testing.T) {
	m := newTestMesh(t)
	top := "name: leak\nsteps:\n  - {id: sub, kind: pipeline, pipeline: {file: /etc/passwd}}\n"
	nested := `name: leak2
steps:
  - id: outer
    kind: pipeline
    pipeline:
      spec:
        name: inner
        steps:
          - {id: sub, kind: pipeline, pipeline: {file: ../../etc/passwd}}
`
	before, err := m.res.Requests.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ spec, file string }{{top, "/etc/passwd"}, {nested, "../../etc/passwd"}} {
		for _, path := range []string{"/api/pipelines/validate", "/api/pipelines", "/api/pipelines?run_id=leak-1"} {
			for _, ct := range []string{"application/yaml", "application/json"} {
				body := []byte(c.spec)
				if ct == "application/json" {
					body = yamlToJSON(t, c.spec)
				}
				msg := wantError(t, path, m.do(t, "POST", path, ct, body), 400, schemas.CodeInvalidPipeline)
				if !strings.Contains(msg, c.file) || !strings.Contains(msg, "reads no file") {
					t.Fatalf("%s: the refusal does not name the file and why: %s", path, msg)
				}
			}
		}
	}
	after, err := m.res.Requests.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after.State.LastSeq != before.State.LastSeq {
		t.Fatalf("a pipeline naming a file was submitted: requests stream at %d, was %d", after.State.LastSeq, before.State.LastSeq)
	}
	// Inline and by-name sub-pipelines are still taken.
	inline := "name: ok\nsteps:\n  - id: outer\n    kind: pipeline\n    pipeline:\n      spec:\n        name: inner\n        steps:\n          - {id: a, agent: TextAgent, params: {op: upper}, inputs: {text: \"text:x\"}}\n"
	if r := m.do(t, "POST", "/api/pipelines/validate", "application/yaml", []byte(inline)); r.status != 200 {
		t.Fatalf("an inline sub-pipeline: %d %s", r.status, clip(r.body))
	}
}

// TestValidateMatchesSubmit posts the same bodies to validate and submit:
// validate answers ok exactly for what submit accepts, and a run it
// answered ok for is not then refused by the orchestrator as invalid.
func TestValidateMatchesSubmit(t *testing.T) {
	m := newTestMesh(t)
	for i, spec := range []string{
		"name: ok\nsteps:\n  - {id: a, agent: TextAgent, params: {op: upper}, inputs: {text: \"text:x\"}}\n",
		"name: file\nsteps:\n  - {id: sub, kind: pipeline, pipeline: {file: sub.yaml}}\n",
		"name: inner\nsteps:\n  - id: sub\n    kind: pipeline\n    pipeline:\n      spec: {name: c, steps: [{id: s, kind: pipeline, pipeline: {file: /etc/hosts}}]}\n",
		"name: agent\nsteps:\n  - {id: a, agent: NoSuchAgent}\n",
		"name: loop\nsteps:\n  - {id: a, agent: TextAgent, kind: for_each, for_each: {items: seed.x, parallel: 1000}}\n",
		"name: bad id\nsteps:\n  - {id: \"a b\", agent: TextAgent}\n",
	} {
		id := fmt.Sprintf("vm-%d", i)
		v := m.do(t, "POST", "/api/pipelines/validate", "application/yaml", []byte(spec))
		s := m.do(t, "POST", "/api/pipelines?run_id="+id, "application/yaml", []byte(spec))
		if (v.status == 200) != (s.status == 202) || (v.status != 200 && (v.status != s.status || errorCode(t, v) != errorCode(t, s))) {
			t.Errorf("spec %d: validate %d %s, submit %d %s", i, v.status, clip(v.body), s.status, clip(s.body))
		}
		if s.status != 202 {
			continue
		}
		var run struct{ Status, Code, Error string }
		var r response
		if !fixture.Within(20*time.Second, func() bool {
			r = m.getJSON(t, "/api/runs/"+id)
			return r.status == 200
		}) {
			t.Fatalf("run %s: not started within 20s: %d %s", id, r.status, clip(r.body))
		}
		decode(t, r, &run)
		if run.Code == schemas.CodeInvalidPipeline {
			t.Errorf("spec %d: validate answered ok, the orchestrator refused the run: %s", i, run.Error)
		}
	}
}

// yamlToJSON is a pipeline's YAML as JSON.
func yamlToJSON(t *testing.T, spec string) []byte {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(spec), &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func errorCode(t *testing.T, r response) string {
	var e errorBody
	decode(t, r, &e)
	if e.Error == nil {
		return ""
	}
	return e.Error.Code
}

// TestRunIDTaken resubmits with the run id of a run that exists: 409
// run_exists, and the run goes on untouched.
func TestRunIDTaken(t *testing.T) {
	m := newTestMesh(t)
	m.startGate(t, "taken-1")
	before := m.effects(t, "taken-1")
	for _, ct := range []string{"application/yaml"} {
		msg := wantError(t, "resubmission", m.do(t, "POST", "/api/pipelines?run_id=taken-1", ct, []byte(gateSpec)), 409, CodeRunExists)
		if !strings.Contains(msg, `"taken-1"`) || !strings.Contains(msg, "another run_id") {
			t.Fatalf("the conflict does not name the run and what to do: %s", msg)
		}
	}
	if after := m.effects(t, "taken-1"); after != before {
		t.Fatalf("the resubmission changed the mesh: before %+v, after %+v", before, after)
	}
}

// TestSecurityHeaders checks the headers every answer carries, and that
// the dashboard needs nothing the Content-Security-Policy forbids: no
// inline script or style, no inline event handler.
func TestSecurityHeaders(t *testing.T) {
	m := newTestMesh(t)
	for _, p := range []string{"/", "/index.html", "/app.js", "/api/agents", "/api/nothing"} {
		r := m.getJSON(t, p)
		h := r.header
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "connect-src 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: Content-Security-Policy %q lacks %s", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q allows unsafe sources", p, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: X-Content-Type-Options %q, X-Frame-Options %q", p, h.Get("X-Content-Type-Options"), h.Get("X-Frame-Options"))
		}
	}
	entries, err := ui.ReadDir("ui")
	if err != nil {
		t.Fatal(err)
	}
	inline := regexp.MustCompile(`(?is)<script(?:\s[^>]*)?>\s*[^<\s]|<style|\son[a-z]+\s*=|\sstyle\s*=|javascript:`)
	setStyle := regexp.MustCompile(`setAttribute\(\s*["']style|\bstyle:\s|innerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function`)
	for _, e := range entries {
		b, err := ui.ReadFile("ui/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(e.Name(), ".html"):
			if loc := inline.FindIndex(b); loc != nil {
				t.Errorf("%s has inline code the policy refuses: %q", e.Name(), b[loc[0]:min(loc[1]+40, len(b))])
			}
			for _, s := range regexp.MustCompile(`<script[^>]*>`).FindAll(b, -1) {
				if !regexp.MustCompile(`src="[a-z]+\.js"`).Match(s) {
					t.Errorf("%s: %s is not a script file of the dashboard", e.Name(), s)
				}
			}
		case strings.HasSuffix(e.Name(), ".js"):
			if loc := setStyle.FindIndex(b); loc != nil {
				t.Errorf("%s sets inline style or HTML the policy refuses: %q", e.Name(), b[loc[0]:min(loc[1]+40, len(b))])
			}
		}
	}
}

// A gateway made without a pipeline validator is refused, with the option
// to give.
func TestNewWithoutValidatorNamesTheOption(t *testing.T) {
	m := meshtest.New(t)
	_, err := New(context.Background(), m.NC)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "WithValidator") {
		t.Fatalf("New without a validator: %v, want ErrConfig naming WithValidator", err)
	}
}
