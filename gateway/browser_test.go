package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentmesh/agentmesh/internal/browsertest"
)

// attackPage is a page of another site that tries every forgery a page can
// make a browser send to the gateway at GW without asking it first: fetch
// in no-cors mode with text/plain, form-encoded and untyped bodies, a
// bodiless POST, a beacon, HTML forms of the three encodings (the
// text/plain one shaped as JSON), and a CORS fetch with a JSON body (which
// needs a preflight the gateway does not grant). Each targets a run RUN
// that waits for its approval. It counts what it sent in window.sent.
const attackPage = `<!doctype html><html><body><script>
const gw = "GW", run = "RUN";
const task = JSON.stringify({inputs: {text: {data_type: "TEXT", value: "pwned"}}, params: {op: "upper"}});
const pipe = "name: forged\nsteps:\n  - {id: a, agent: TextAgent, params: {op: upper}, inputs: {text: \"text:pwned\"}}\n";
const targets = [
  ["/api/agents/TextAgent/tasks", task],
  ["/api/chat", JSON.stringify({message: "pwned"})],
  ["/api/pipelines", pipe],
  ["/api/runs/" + run + "/steps/review/approve", JSON.stringify({comment: "pwned"})],
  ["/api/runs/" + run + "/steps/review/input", JSON.stringify({value: "pwned"})],
  ["/api/files?name=pwned.txt", "pwned"],
];
window.sent = 0;
window.corsErrors = 0;
const jobs = [];
const post = (path, init) => { window.sent++; jobs.push(fetch(gw + path, Object.assign({method: "POST", mode: "no-cors", credentials: "include"}, init)).catch(() => {})); };
for (const [path, body] of targets) {
  post(path, {headers: {"Content-Type": "text/plain"}, body});
  post(path, {headers: {"Content-Type": "application/x-www-form-urlencoded"}, body});
  post(path, {body: new Blob([body])}); // no Content-Type at all
  if (navigator.sendBeacon(gw + path, new Blob([body], {type: "text/plain"}))) window.sent++;
  // A CORS request with JSON: the browser asks first (OPTIONS) and, not
  // granted, never sends it.
  jobs.push(fetch(gw + path, {method: "POST", headers: {"Content-Type": "application/json"}, body}).catch(() => { window.corsErrors++; }));
}
post("/api/runs/" + run + "/cancel", {});
post("/api/runs/" + run + "/cancel", {headers: {"Content-Type": "text/plain"}, body: "x"});
let n = 0;
const form = (path, enctype, fields) => {
  const f = document.createElement("form"), frame = document.createElement("iframe");
  frame.name = "f" + n++;
  f.method = "POST"; f.action = gw + path; f.enctype = enctype; f.target = frame.name;
  for (const [k, v] of Object.entries(fields)) {
    const i = document.createElement("input");
    i.name = k; i.value = v; f.append(i);
  }
  document.body.append(frame, f);
  window.sent++;
  f.submit();
};
for (const [path] of targets) {
  for (const enc of ["application/x-www-form-urlencoded", "multipart/form-data", "text/plain"]) {
    // text/plain sends name=value: {"message":"pwned","x":"=" } is JSON.
    form(path, enc, {'{"message":"pwned","value":"pwned","comment":"pwned","x":"': '"}'});
  }
}
form("/api/runs/" + run + "/cancel", "application/x-www-form-urlencoded", {});
Promise.allSettled(jobs).then(() => { window.fetched = true; });
</script></body></html>`

// pageState is how far the attack page got.
type pageState struct {
	Fetched    bool `json:"fetched"`    // every fetch settled
	Sent       int  `json:"sent"`       // requests the browser was asked to send
	CORSErrors int  `json:"corsErrors"` // JSON requests the browser did not send
}

// postCounter counts the POSTs the gateway answered, by status.
type postCounter struct {
	h      http.Handler
	mu     sync.Mutex
	status map[int]int
	n      int
}

func (c *postCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, status: 200}
	c.h.ServeHTTP(rec, r)
	if r.Method == "POST" {
		c.mu.Lock()
		c.status[rec.status]++
		c.n++
		c.mu.Unlock()
	}
}

func (c *postCounter) counts() (int, map[int]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int]int{}
	for k, v := range c.status {
		out[k] = v
	}
	return c.n, out
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// TestBrowserForgeries opens, in a real headless Chromium, a page served
// from another origin (another site: localhost against 127.0.0.1; and
// the same host on another port) that tries every forgery against the
// gateway. The gateway answers each POST it gets with 403, and on the mesh
// nothing changed: no task, chat turn, pipeline or file, and the run still
// waits for its approval.
func TestBrowserForgeries(t *testing.T) {
	if _, err := browsertest.Find(); err != nil {
		t.Skipf("browser test skipped: %v", err)
	}
	m := newTestMesh(t)
	m.startGate(t, "gate-b")
	before := m.effects(t, "gate-b")
	counter := &postCounter{h: m.gw, status: map[int]int{}}
	target := httptest.NewServer(counter) // the gateway, on 127.0.0.1
	t.Cleanup(target.Close)
	page := strings.NewReplacer("GW", target.URL, "RUN", "gate-b").Replace(attackPage)
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(attacker.Close)
	tab := browsertest.Tab(t, 2*time.Minute)
	port := attacker.URL[strings.LastIndex(attacker.URL, ":")+1:]
	total := 0
	for _, origin := range []string{"http://localhost:" + port, attacker.URL} { // cross-site, then same-site
		if err := chromedp.Do(tab, chromedp.Navigate(origin+"/")); err != nil {
			t.Fatal(err)
		}
		var state pageState
		deadline := time.Now().Add(30 * time.Second)
		for {
			var err error
			if state, err = chromedp.Run(tab, chromedp.Evaluate[pageState](`({fetched: !!window.fetched, sent: window.sent || 0, corsErrors: window.corsErrors || 0})`)); err != nil {
				t.Fatal(err)
			}
			fetched, sent := state.Fetched, state.Sent
			n, _ := counter.counts()
			if fetched && n >= total+sent {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("page %s: sent %d, the gateway answered %d POSTs", origin, sent, n-total)
			}
			time.Sleep(100 * time.Millisecond)
		}
		sent, corsErrors := state.Sent, state.CORSErrors
		total += sent
		if sent < 30 || corsErrors != 6 {
			t.Fatalf("page %s: sent %d forgeries, %d JSON requests refused by the browser; want 30 or more and 6", origin, sent, corsErrors)
		}
	}
	n, status := counter.counts()
	if n != total || status[http.StatusForbidden] != n {
		t.Fatalf("the gateway answered %d POSTs (statuses %v); want %d, all 403", n, status, total)
	}
	if after := m.effects(t, "gate-b"); after != before {
		t.Fatalf("forgeries changed the mesh: before %+v, after %+v", before, after)
	}
	t.Logf("%d forgeries from 2 origins, each answered 403; %s", total, fmt.Sprint(before))
}

// TestDashboardUnderPolicy opens every page of the dashboard in a real
// Chromium, with the gateway's Content-Security-Policy on: each page
// draws, and the browser reports no violation of the policy.
func TestDashboardUnderPolicy(t *testing.T) {
	if _, err := browsertest.Find(); err != nil {
		t.Skipf("browser test skipped: %v", err)
	}
	m := newTestMesh(t)
	m.startGate(t, "gate-d")
	tab := browsertest.Tab(t, 2*time.Minute)
	// Record every violation, from before the page's own scripts run.
	watch := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.violations = []; document.addEventListener("securitypolicyviolation", (e) => window.violations.push(e.violatedDirective + " " + e.blockedURI));`})
		return chromedp.Void{}, err
	}
	if err := chromedp.Do(tab, watch); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ hash, css string }{
		{"#/agents", `section.agent[data-agent="TextAgent"]`},
		{"#/runs", `a[href="#/runs/gate-d"]`},
		{"#/runs/gate-d", `#dag g.node[data-step="review"]`},
		{"#/conversations", `main h1, main h2`},
		{"#/files", `button.file`},
		{"#/submit", `#pipeline-yaml`},
	} {
		ctx, cancel := context.WithTimeout(tab, 20*time.Second)
		err := chromedp.Do(ctx, chromedp.Navigate(m.http.URL+"/"+p.hash), chromedp.WaitReady(chromedp.CSS(p.css)))
		cancel()
		if err != nil {
			text, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("page %s: no %s (%v); it shows:\n%s", p.hash, p.css, err, text)
		}
		violations, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`window.violations || []`))
		if err != nil {
			t.Fatal(err)
		}
		if len(violations) > 0 {
			t.Fatalf("page %s broke the Content-Security-Policy: %v", p.hash, violations)
		}
	}
}
