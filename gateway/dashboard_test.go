package gateway

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentmesh/agentmesh/internal/browsertest"
	"github.com/agentmesh/agentmesh/schemas"
)

// xss is an agent-provided string that would run script if a page set it
// as HTML.
const xss = `<img src=x onerror=window.pwned=1>`

// subjectSpec is a run whose approval step acts on a draft an agent wrote
// (carrying xss), and whose input step waits behind it.
const subjectSpec = `name: publish
steps:
  - {id: draft, agent: TextAgent, params: {op: lower}, inputs: {text: 'text:` + xss + ` ship the sunsets'}}
  - id: review
    kind: approval
    depends_on: [draft]
    timeout_ms: 600000
    human: {prompt: "Publish the draft?", default: reject}
  - {id: title, kind: input, depends_on: [review], timeout_ms: 600000, human: {prompt: "Title?"}}
`

// dashboard is what the steps of TestDashboardInBrowser share.
type dashboard struct {
	m     *testMesh
	tab   context.Context
	shots string
}

// TestDashboardInBrowser drives the dashboard in a real headless Chromium
// against a mesh holding runs of three pipelines (one waiting for its
// approval, one rejected), conversations and a text file: the runs list
// searched, filtered, sorted and paged by the gateway; a run's timeline
// and legend; the approval panel's subject; the Live lines' times; file
// tiles; every page at phone width. Agent-provided strings stay text.
// Screenshots go to $AGENTMESH_ARTIFACTS.
func TestDashboardInBrowser(t *testing.T) {
	if _, err := browsertest.Find(); err != nil {
		t.Skipf("browser test skipped: %v", err)
	}
	m := newTestMesh(t)
	for _, id := range []string{"alpha-1", "alpha-2", "beta-1"} {
		m.runToEnd(t, id, textSpec(id[:strings.Index(id, "-")]))
	}
	m.startGate(t, "rej-1")
	events := m.openSSE(t, "/api/runs/rej-1/events")
	if r := m.postJSON(t, "/api/runs/rej-1/steps/review/approve", `{"reject": true}`); r.status != 200 {
		t.Fatalf("reject rej-1: %d %s", r.status, clip(r.body))
	}
	waitEvent(t, events, "io.agentmesh.pipeline.completed", nil)
	events = m.openSSE(t, "/api/runs/pub-1/events")
	if r := m.do(t, "POST", "/api/pipelines?run_id=pub-1", "application/yaml", []byte(subjectSpec)); r.status != 202 {
		t.Fatalf("submit pub-1: %d %s", r.status, clip(r.body))
	}
	waitEvent(t, events, "io.agentmesh.pipeline.step.waiting", func(ev sseEvent) bool { return ev.Data["stepid"] == "review" })
	for _, c := range []struct{ id, message string }{{"c-xss", xss + " count the words in hello world"}, {"c-sunset", "find sunset images"}} {
		events := m.openSSE(t, "/api/conversations/"+c.id+"/events")
		if r := m.postJSON(t, "/api/chat", `{"conversation_id":"`+c.id+`","new":true,"message":"`+c.message+`"}`); r.status != 202 {
			t.Fatalf("chat %s: %d %s", c.id, r.status, clip(r.body))
		}
		waitEvent(t, events, "io.agentmesh.chat.responded", nil)
	}
	if r := m.do(t, "POST", "/api/files?name=notes-of-the-quarter.txt", "text/plain; charset=utf-8", []byte("notes")); r.status != 201 {
		t.Fatalf("upload: %d %s", r.status, clip(r.body))
	}

	d := &dashboard{m: m, tab: browsertest.Tab(t, 4*time.Minute), shots: browsertest.ArtifactDir(t)}
	for _, step := range []struct {
		name string
		run  func(*dashboard, *testing.T)
	}{
		{"search", (*dashboard).search},
		{"filter", (*dashboard).filter},
		{"sort and page", (*dashboard).sortAndPage},
		{"timeline and legend", (*dashboard).timeline},
		{"approval subject", (*dashboard).approvalSubject},
		{"conversations", (*dashboard).conversations},
		{"streamed text", (*dashboard).streamedText},
		{"file tiles", (*dashboard).fileTiles},
		{"agent versions", (*dashboard).agentVersions},
		{"phone width", (*dashboard).phoneWidth},
		{"fork", (*dashboard).fork}, // last: it adds runs the lists above count
	} {
		t.Run(step.name, func(t *testing.T) { step.run(d, t) })
	}
	if pwned, err := chromedp.Run(d.tab, chromedp.Evaluate[bool](`!!window.pwned`)); err != nil || pwned {
		t.Errorf("an agent-provided string ran as HTML (window.pwned %v, %v)", pwned, err)
	}
}

// do runs actions in the tab, failing the test when they fail or take
// over 20 seconds (an element that never comes).
func (d *dashboard) do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(d.tab, 20*time.Second)
	defer cancel()
	if err := browsertest.Do(ctx, actions...); err != nil {
		text, _ := chromedp.Run(d.tab, chromedp.Evaluate[string](`document.getElementById("main").innerText`))
		t.Fatalf("%v; the page shows:\n%s", err, text)
	}
}

func (d *dashboard) open(t *testing.T, hash string) {
	t.Helper()
	d.do(t, chromedp.Navigate(d.m.http.URL+"/"+hash))
}

func (d *dashboard) until(t *testing.T, what, expr string) {
	t.Helper()
	browsertest.Until(t, d.tab, 20*time.Second, what, expr)
}

func (d *dashboard) eval(t *testing.T, expr string) string {
	t.Helper()
	v, err := chromedp.Run(d.tab, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// runRows is an expression: the runs list's run ids, comma-separated.
const runRows = `[...document.querySelectorAll("#runs tbody tr")].map((r) => r.dataset.run).join()`

// search: words typed in the search box narrow the list on the server and
// go in the address.
func (d *dashboard) search(t *testing.T) {
	d.open(t, "#/runs")
	d.until(t, "every run", runRows+` === "pub-1,rej-1,beta-1,alpha-2,alpha-1"`)
	d.do(t, chromedp.SendKeys(chromedp.CSS("#runs-q"), "ALPHA"))
	// (typed a key at a time: the list may show what fewer keys match first)
	d.until(t, "the alpha runs, counted, the search in the address", runRows+` === "alpha-2,alpha-1" && location.hash === "#/runs?q=ALPHA" &&
		document.getElementById("runs-range").textContent === "1–2 of 2"`)
	browsertest.Screenshot(t, d.tab, d.shots, "runs-search.png")
	d.open(t, "#/runs?q=nothing-like-this")
	d.until(t, "no match", `document.querySelector("#runs .empty") && document.querySelector("#runs .empty").textContent === "No run matches."`)
}

// filter: status, agent and pipeline name, each from its control.
func (d *dashboard) filter(t *testing.T) {
	d.open(t, "#/runs")
	d.until(t, "the agent filter's options", `document.querySelector('#runs-agent option[value="TextAgent"]')`)
	d.eval(t, `(() => { const s = document.getElementById("runs-status"); s.value = "waiting"; s.dispatchEvent(new Event("change")); return ""; })()`)
	d.until(t, "the waiting run", runRows+` === "pub-1"`)
	d.eval(t, `(() => { const s = document.getElementById("runs-status"); s.value = "failed"; s.dispatchEvent(new Event("change")); return ""; })()`)
	d.until(t, "the failed run", runRows+` === "rej-1"`)
	browsertest.Screenshot(t, d.tab, d.shots, "runs-filter.png")
	d.open(t, "#/runs?agent=TextAgent")
	d.until(t, "the runs of TextAgent", runRows+` === "pub-1,beta-1,alpha-2,alpha-1"`)
	d.do(t, chromedp.Click(chromedp.CSS(`#runs button[data-name="beta"]`)))
	d.until(t, "the runs of pipeline beta", runRows+` === "beta-1" && document.getElementById("runs-name")`)
	d.do(t, chromedp.Click(chromedp.CSS(`#runs-name`)))
	d.until(t, "the name filter taken off", runRows+` === "pub-1,beta-1,alpha-2,alpha-1"`)
	d.open(t, "#/runs?since=24h")
	d.until(t, "the runs of the last day", runRows+` === "pub-1,rej-1,beta-1,alpha-2,alpha-1"`)
	if v := d.eval(t, `document.getElementById("runs-since").value`); v != "24h" {
		t.Errorf("the time filter shows %q, want 24h", v)
	}
}

// sortAndPage: a column header sorts ascending, then descending; the pager
// steps through pages of the sorted list, saying where it is.
func (d *dashboard) sortAndPage(t *testing.T) {
	d.open(t, "#/runs?limit=2")
	d.until(t, "the first page", runRows+` === "pub-1,rej-1" && document.getElementById("runs-range").textContent === "1–2 of 5" &&
		document.querySelector('#runs-agent option[value="TextAgent"]')`)
	click := func(css string) {
		t.Helper()
		d.do(t, chromedp.Click(chromedp.CSS(css)))
	}
	click(`th[data-sort="id"] button`)
	d.until(t, "sorted by id", runRows+` === "alpha-1,alpha-2" && document.querySelector('th[data-sort="id"]').getAttribute("aria-sort") === "ascending"`)
	click(`#runs-next`)
	d.until(t, "the second page", runRows+` === "beta-1,pub-1" && document.getElementById("runs-range").textContent === "3–4 of 5"`)
	click(`#runs-next`)
	d.until(t, "the last page", runRows+` === "rej-1" && document.getElementById("runs-next").disabled`)
	browsertest.Screenshot(t, d.tab, d.shots, "runs-paged.png")
	click(`th[data-sort="id"] button`)
	d.until(t, "sorted by id, descending, from the first page", runRows+` === "rej-1,pub-1" && document.getElementById("runs-prev").disabled`)
}

// timeline: beside the DAG, one row a step; a finished agent step's bar is
// its queue wait and its run time, a waiting approval's bar its wait for a
// person, a pending step has none. The legend tells pending from skipped,
// and so do the steps' colours.
func (d *dashboard) timeline(t *testing.T) {
	d.open(t, "#/runs/pub-1")
	d.until(t, "the timeline", `document.querySelector('#timeline .gantt-row[data-step="draft"] .bar.run') && document.querySelector('#timeline .gantt-row[data-step="review"] .bar.human')`)
	if rows := d.eval(t, `[...document.querySelectorAll("#timeline .gantt-row")].map((r) => r.dataset.step + ":" + r.dataset.state).join()`); rows != "draft:completed,review:waiting,title:pending" {
		t.Errorf("timeline rows %s, want draft:completed,review:waiting,title:pending", rows)
	}
	if n := d.eval(t, `String(document.querySelectorAll('#timeline .gantt-row[data-step="title"] .bar').length)`); n != "0" {
		t.Errorf("the pending step has %s bars", n)
	}
	side := d.eval(t, `(() => { const a = document.getElementById("dag").getBoundingClientRect(), b = document.getElementById("timeline").getBoundingClientRect(); return a.right <= b.left && a.top < b.bottom && b.top < a.bottom ? "beside" : JSON.stringify([a, b]); })()`)
	if side != "beside" {
		t.Errorf("the timeline is not beside the DAG: %s", side)
	}
	d.do(t, chromedp.Click(chromedp.CSS(`#timeline .gantt-row[data-step="draft"]`)))
	d.until(t, "the draft's panel", `document.querySelector("#step-panel h2") && document.querySelector("#step-panel h2").textContent.startsWith("draft")`)
	if text := d.eval(t, `document.getElementById("step-panel").innerText`); !strings.Contains(text, "wave 1") {
		t.Errorf("the first wave's step does not say wave 1 (the CLI's numbering):\n%s", text)
	}
	browsertest.Screenshot(t, d.tab, d.shots, "run-timeline.png")

	// The legend names every state; pending and skipped look nothing alike.
	if states := d.eval(t, `[...document.querySelectorAll("#legend [data-state]")].map((e) => e.dataset.state).join()`); states != "pending,running,waiting,completed,failed,skipped" {
		t.Errorf("the legend lists %s", states)
	}
	pending := d.eval(t, `getComputedStyle(document.querySelector('#dag g.node[data-step="title"] rect')).fill`)
	d.open(t, "#/runs/rej-1")
	d.until(t, "the skipped step", `document.querySelector('#dag g.node[data-step="title"][data-state="skipped"]')`)
	skipped := d.eval(t, `getComputedStyle(document.querySelector('#dag g.node[data-step="title"] rect')).fill`)
	swatch := d.eval(t, `getComputedStyle(document.querySelector('#legend [data-state="skipped"] .swatch')).backgroundColor`)
	if diff := lightness(pending) - lightness(skipped); diff < 0.4 {
		t.Errorf("pending (%s) and skipped (%s) steps differ by %.2f in lightness; want 0.4 or more", pending, skipped, diff)
	}
	if swatch != skipped {
		t.Errorf("the legend's skipped swatch is %s, the skipped step %s", swatch, skipped)
	}
	d.until(t, "the skipped row", `document.querySelector('#timeline .gantt-row[data-step="title"][data-state="skipped"] .gantt-note')`)
	browsertest.Screenshot(t, d.tab, d.shots, "run-legend.png")
}

// lightness is the mean of an rgb(r, g, b) colour's channels, from 0 to 1.
func lightness(css string) float64 {
	f := strings.FieldsFunc(css, func(r rune) bool { return r < '0' || r > '9' })
	if len(f) < 3 {
		return -1
	}
	sum := 0.0
	for _, s := range f[:3] {
		n, _ := strconv.Atoi(s)
		sum += float64(n)
	}
	return sum / 3 / 255
}

// approvalSubject: the waiting approval's panel shows what it approves, the
// draft the agent wrote, as text, above its buttons.
func (d *dashboard) approvalSubject(t *testing.T) {
	d.open(t, "#/runs/pub-1")
	d.until(t, "the review step", `document.querySelector('#dag g.node[data-step="review"][data-state="waiting"]')`)
	d.do(t, chromedp.Click(chromedp.CSS(`#dag g.node[data-step="review"]`)))
	d.until(t, "the subject", `document.querySelector('#step-subject [data-from="draft"] .text-value') && document.querySelector("#step-actions button.approve")`)
	got := d.eval(t, `document.querySelector('#step-subject [data-from="draft"] .text-value').textContent`)
	if got != xss+" ship the sunsets" {
		t.Errorf("the approval's subject shows %q, want the draft %q", got, xss+" ship the sunsets")
	}
	if n := d.eval(t, `String(document.querySelectorAll("#step-panel img").length)`); n != "0" {
		t.Errorf("the draft was drawn as HTML: %s img elements in the panel", n)
	}
	order := d.eval(t, `String(document.getElementById("step-subject").compareDocumentPosition(document.getElementById("step-actions")) & Node.DOCUMENT_POSITION_FOLLOWING)`)
	if order == "0" {
		t.Errorf("the subject is not shown before the approval's buttons")
	}
	browsertest.Screenshot(t, d.tab, d.shots, "approval-subject.png")
}

// conversations: the list searched, the message shown as text; a
// conversation's Live lines carry their events' times, not the page's.
func (d *dashboard) conversations(t *testing.T) {
	const rows = `[...document.querySelectorAll("#conversations tbody tr")].map((r) => r.dataset.conversation).join()`
	d.open(t, "#/conversations")
	d.until(t, "both conversations", rows+` === "c-sunset,c-xss"`)
	d.do(t, chromedp.SendKeys(chromedp.CSS("#conversations-q"), "hello"))
	d.until(t, "the conversation about hello", rows+` === "c-xss"`)
	if got := d.eval(t, `document.querySelector('tr[data-conversation="c-xss"] td.clip').textContent`); !strings.HasPrefix(got, xss) {
		t.Errorf("the last message shows %q, want it to start with %q", got, xss)
	}
	browsertest.Screenshot(t, d.tab, d.shots, "conversations-search.png")
	d.open(t, "#/conversations")
	d.until(t, "the state filter", `document.getElementById("conversations-status")`)
	d.eval(t, `(() => { const s = document.getElementById("conversations-status"); s.value = "completed"; s.dispatchEvent(new Event("change")); return ""; })()`)
	d.until(t, "the completed conversations", `location.hash === "#/conversations?status=completed" && [...document.querySelectorAll("#conversations tbody tr")].some((r) => r.dataset.conversation === "c-sunset") &&
		[...document.querySelectorAll("#conversations tbody tr")].every((r) => r.dataset.state === "completed")`)

	loaded := time.Now()
	d.open(t, "#/conversations/c-sunset")
	d.until(t, "the Live lines", `document.querySelectorAll("#progress li").length > 0`)
	times := d.eval(t, `[...document.querySelectorAll("#progress li")].map((li) => li.dataset.time).join("|")`)
	for _, s := range strings.Split(times, "|") {
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !at.Before(loaded) {
			t.Errorf("a Live line says it happened at %q (%v); the turn was over before the page loaded at %s", s, err, loaded.Format(time.RFC3339Nano))
		}
	}
	if text := d.eval(t, `document.getElementById("turns").innerText`); strings.Contains(text, "1 steps") {
		t.Errorf("the turn says 1 steps:\n%s", text)
	}
}

// streamedText: the text the model writes shows on the conversation's
// page piece by piece, as text, a lost piece as "…", a new model call's
// text in place of the last one's.
func (d *dashboard) streamedText(t *testing.T) {
	d.do(t, chromedp.Navigate("about:blank"))
	d.open(t, "#/conversations/c-sunset")
	d.until(t, "the conversation's stream open", `document.getElementById("live").classList.contains("on") && document.querySelector("#turns .turn")`)
	if hidden := d.eval(t, `String(document.getElementById("writing").hidden)`); hidden != "true" {
		t.Errorf("the writing box shows before any piece came")
	}
	d.m.publishDeltas(t, "c-sunset",
		schemas.ChatDelta{Turn: 9, Step: 1, Seq: 1, Text: xss},
		schemas.ChatDelta{Turn: 9, Step: 1, Seq: 2, Text: " and "},
		schemas.ChatDelta{Turn: 9, Step: 1, Seq: 4, Text: "more"})
	d.until(t, "the pieces", `document.getElementById("writing-text") && document.getElementById("writing-text").textContent === "mesh `+xss+` and …more" && !document.getElementById("writing").hidden`)
	if n := d.eval(t, `String(document.querySelectorAll("#writing img").length)`); n != "0" {
		t.Errorf("a piece of text was drawn as HTML: %s img elements", n)
	}
	browsertest.Screenshot(t, d.tab, d.shots, "conversation-streaming.png")
	d.m.publishDeltas(t, "c-sunset", schemas.ChatDelta{Turn: 9, Step: 2, Seq: 1, Text: "Here they are."})
	d.until(t, "the next model call's text", `document.getElementById("writing-text").textContent === "mesh Here they are." && document.getElementById("writing-text").dataset.step === "2"`)
}

// fileTiles: a text file's tile names its type without parameters and
// nothing in it overflows.
func (d *dashboard) fileTiles(t *testing.T) {
	d.open(t, "#/files?type=documents")
	d.until(t, "the text file's tile", `[...document.querySelectorAll("#files .doc-icon")].some((e) => e.textContent === "TXT")`)
	if over := d.eval(t, `[...document.querySelectorAll("#files button.file, #files .doc-icon")].filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.textContent).join("|")`); over != "" {
		t.Errorf("file tiles overflow: %s", over)
	}
}

// phoneWidth: at 400 CSS pixels every page fits the screen's width, and
// the run's DAG, timeline and panel stack.
// agentVersions: an agent's card shows its recent results by version and
// its rollout, as a rollout is judged.
func (d *dashboard) agentVersions(t *testing.T) {
	b, _ := json.Marshal(schemas.Rollout{Agent: "TextAgent", From: "1.0.0", To: "2.0.0", Weight: 10})
	if _, err := d.m.res.Rollouts.Put(context.Background(), "TextAgent", b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.m.res.Rollouts.Delete(context.Background(), "TextAgent") })
	d.open(t, "#/agents")
	card := `document.querySelector('section.agent[data-agent="TextAgent"]')`
	d.until(t, "TextAgent's results by version", card+`?.querySelector('table.versions tr[data-version="1.0.0"]') != null`)
	d.until(t, "TextAgent's rollout", `(`+card+`?.querySelector('p.rollout')?.textContent || "").includes("10% of new tasks to 2.0.0, 90% to 1.0.0")`)
}

func (d *dashboard) phoneWidth(t *testing.T) {
	d.do(t, chromedp.EmulateViewport(400, 860, chromedp.EmulateScale(1)))
	defer func() { _ = chromedp.Do(d.tab, chromedp.EmulateViewport(1280, 860)) }()
	for _, p := range []struct{ hash, ready, shot string }{
		{"#/agents", `document.querySelector('section.agent[data-agent="TextAgent"]')`, "phone-agents.png"},
		{"#/runs", `document.querySelector("#runs tbody tr")`, "phone-runs.png"},
		{"#/runs/pub-1", `document.querySelector('#timeline .gantt-row[data-step="review"] .bar')`, "phone-run.png"},
		{"#/conversations", `document.querySelector("#conversations tbody tr")`, "phone-conversations.png"},
		{"#/conversations/c-sunset", `document.querySelector("#turns .turn")`, ""},
		{"#/files", `document.querySelector("#files button.file")`, "phone-files.png"},
		{"#/submit", `document.getElementById("pipeline-yaml")`, ""},
	} {
		d.open(t, p.hash)
		d.until(t, p.hash, p.ready)
		if w := d.eval(t, `document.documentElement.scrollWidth + " " + document.documentElement.clientWidth`); strings.Fields(w)[0] != strings.Fields(w)[1] {
			wide := d.eval(t, `[...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1).slice(0, 5).map((e) => e.tagName + "." + e.className).join(" ")`)
			t.Errorf("%s at 400 px: the page is %s px wide (page, viewport); wider than the screen: %s", p.hash, w, wide)
		}
		if p.shot != "" {
			browsertest.Screenshot(t, d.tab, d.shots, p.shot)
		}
	}
	d.open(t, "#/runs/pub-1")
	d.until(t, "the run", `document.querySelector('#timeline .gantt-row[data-step="review"] .bar')`)
	stacked := d.eval(t, `(() => { const a = document.getElementById("dag").getBoundingClientRect(), b = document.getElementById("timeline").getBoundingClientRect(), c = document.getElementById("step-panel").getBoundingClientRect(); return a.bottom <= b.top && b.bottom <= c.top ? "stacked" : "side by side"; })()`)
	if stacked != "stacked" {
		t.Errorf("at 400 px the DAG, timeline and panel are %s", stacked)
	}
}

// twoSteps upper-cases its text, then reverses it.
const twoSteps = `name: two
steps:
  - {id: shout, agent: TextAgent, params: {op: upper}, inputs: {text: "text:fork me"}}
  - {id: turn, agent: TextAgent, depends_on: [shout], params: {op: reverse}}
`

// fork: the run page's fork button on an ended run's second step, its
// params edited, starts a new run that the page moves to: it completes,
// says where it came from, and its first step says it was kept.
func (d *dashboard) fork(t *testing.T) {
	d.m.runToEnd(t, "two-1", twoSteps)
	d.open(t, "#/runs/two-1?step=turn")
	d.until(t, "the fork form", `document.querySelector("#step-fork #fork-button") && document.getElementById("fork-params").value.includes("reverse")`)
	d.eval(t, `(() => { document.getElementById("fork-params").value = '{"op": "lower"}'; return ""; })()`)
	d.do(t, chromedp.Click(chromedp.CSS(`#fork-button`)))
	d.until(t, "the forked run, completed", `location.hash.startsWith("#/runs/two-1-fork-") && document.querySelector('#run-status[data-status="completed"]') && document.getElementById("run-origin")`)
	if o := d.eval(t, `document.getElementById("run-origin").innerText`); o != "forked from run two-1 at step turn" {
		t.Errorf("the fork's origin reads %q", o)
	}
	id := d.eval(t, `decodeURIComponent(location.hash.slice("#/runs/".length))`)
	var run struct {
		Steps map[string]struct {
			From    string                        `json:"from"`
			Outputs map[string]schemas.TypedValue `json:"outputs"`
		} `json:"steps"`
	}
	decode(t, d.m.getJSON(t, "/api/runs/"+id), &run)
	if run.Steps["shout"].From != "two-1" || run.Steps["turn"].From != "" || string(run.Steps["turn"].Outputs["text"].Value) != `"fork me"` {
		t.Errorf("the fork %s: %+v, want shout kept from two-1 and turn run again with op lower", id, run.Steps)
	}
	d.do(t, chromedp.Click(chromedp.CSS(`#dag g.node[data-step="shout"]`)))
	d.until(t, "the kept step's panel", `document.getElementById("step-kept") && document.getElementById("step-kept").innerText.includes("two-1")`)
	browsertest.Screenshot(t, d.tab, d.shots, "run-fork.png")

	// Re-run: the whole run again from its spec, a new run that completes.
	d.open(t, "#/runs/two-1")
	d.until(t, "the re-run button", `document.getElementById("rerun-button")`)
	d.do(t, chromedp.Click(chromedp.CSS(`#rerun-button`)))
	d.until(t, "the re-run, completed", `location.hash.startsWith("#/runs/two-") && !location.hash.includes("fork") && location.hash !== "#/runs/two-1" && document.querySelector('#run-status[data-status="completed"]') && !document.getElementById("run-origin")`)
}
