package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/gateway"
	"github.com/agentmesh/agentmesh/internal/browsertest"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/resolvers"
)

// seedChat is the seed scenario as a person types it into the chat box.
const seedChat = "find my sunset photos and put them in a folder"

// TestDashboardInBrowser opens the dashboard of a running mesh in headless
// Chromium — the built-in agents and the orchestrator as `agentmesh up`
// child processes on an embedded NATS server, the orchestrator's LLM the
// scripted llmtest model, the gateway serving the API and the embedded UI —
// and does what a person would, one step after another on one page (the
// dashSession methods): sees the built-in agents, sends the seed message
// from the chat box and watches its tool calls and the sunset folder
// appear, pastes a bad pipeline and reads the CLI's message, submits the
// sunsets pipeline and watches every step of its DAG turn completed,
// approves and answers a waiting run, signs in with a token, browses the
// files. Screenshots go to $AGENTMESH_ARTIFACTS (or a temporary directory).
func TestDashboardInBrowser(t *testing.T) {
	if _, err := findChromium(); err != nil {
		t.Skipf("browser test skipped: %v", err)
	}
	mesh := dashboardMesh(t)
	base, natsURL := mesh.gateway(t), mesh.srv.URL()
	tab := browser(t, 4*time.Minute) // after the mesh: its cleanup closes the browser first
	shots := artifactDir(t)
	s := &dashSession{tab: tab, mesh: mesh, base: base, natsURL: natsURL, shots: shots}
	for _, step := range []struct {
		name string
		run  func(*dashSession, *testing.T)
	}{
		{"agents", (*dashSession).agents},
		{"chat", (*dashSession).chat},
		{"bad pipeline", (*dashSession).badPipeline},
		{"sunsets pipeline", (*dashSession).sunsetsPipeline},
		{"approval and input", (*dashSession).approvalAndInput},
		{"waves", (*dashSession).waves},
		{"live lists", (*dashSession).liveLists},
		{"token", (*dashSession).token},
		{"files", (*dashSession).files},
	} {
		t.Run(step.name, func(t *testing.T) { step.run(s, t) })
	}
}

// dashSession is what the steps of the browser session share: the tab, the
// mesh, the gateway's and the NATS server's addresses, where screenshots go.
type dashSession struct {
	tab                  context.Context
	mesh                 dashMesh
	base, natsURL, shots string
}

// agents: every built-in agent is listed with a live instance, its contract
// and its heartbeat.
func (s *dashSession) agents(t *testing.T) {
	if err := chromedp.Do(s.tab, chromedp.Navigate(s.base+"/#/agents")); err != nil {
		t.Fatal(err)
	}
	for _, name := range builtinNames() {
		waitFor(t, s.tab, 30*time.Second, "agent "+name, `section.agent[data-agent="`+name+`"] .instances tbody tr`)
	}
	text := pageText(t, s.tab)
	params, err := chromedp.Run(s.tab, chromedp.Text(chromedp.CSS(`section.agent[data-agent="ImageSearchAgent"] details.params summary`)))
	if err != nil || !strings.Contains(params, "query") {
		t.Errorf("ImageSearchAgent's params do not list query: %q (%v)", params, err)
	}
	for _, want := range []string{"FILE_IDS/images", "CATEGORIZATION", "last heartbeat"} {
		if !strings.Contains(text, want) {
			t.Errorf("the agents page lacks %q:\n%s", want, text)
		}
	}
	screenshot(t, s.tab, s.shots, "agents.png")
}

// chat: the seed message typed into the chat box; its three tool calls
// appear, the images found as thumbnails, the sunset folder as a tree, then
// the answer.
func (s *dashSession) chat(t *testing.T) {
	err := chromedp.Do(s.tab,
		chromedp.Navigate(s.base+"/#/conversations"),
		chromedp.WaitVisible(chromedp.CSS("#chat-input")),
		chromedp.SendKeys(chromedp.CSS("#chat-input"), seedChat),
		chromedp.Click(chromedp.CSS("#chat-send")))
	if err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"ImageSearchAgent", "AnalysisAgent", "FolderAgent"} {
		waitFor(t, s.tab, 60*time.Second, "tool call "+agent, `.tool-call[data-tool="`+agent+`"]`)
	}
	waitFor(t, s.tab, 30*time.Second, "the images found", `.tool-call[data-tool="ImageSearchAgent"] a.thumb img`)
	waitFor(t, s.tab, 30*time.Second, "the sunset folder", `.tool-call[data-tool="FolderAgent"] [data-folder="sunset"] a.thumb img`)
	waitFor(t, s.tab, 30*time.Second, "the answer", `.turn .assistant`)
	if text := pageText(t, s.tab); !strings.Contains(text, seedChat) || !strings.Contains(text, "sunset folder") {
		t.Errorf("the conversation does not show the question and the answer:\n%s", text)
	}
	screenshot(t, s.tab, s.shots, "conversation.png")
}

// badPipeline: a pipeline naming an agent that does not exist is refused
// in the paste box with the message `agentmesh run` gives for it.
func (s *dashSession) badPipeline(t *testing.T) {
	bad := "name: typo\nsteps:\n  - {id: search, agent: ImageSerchAgent, params: {query: sunset}}\n"
	s.submit(t, bad)
	waitFor(t, s.tab, 15*time.Second, "the validation message", `#pipeline-check [data-valid="false"]`)
	shown, err := chromedp.Run(s.tab, chromedp.Text(chromedp.CSS(`#pipeline-check [data-valid="false"]`)))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "typo.yaml")
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, cliErr, code := runBinary(t, exec.Command(agentBinary(t), "--nats", s.natsURL, "run", file))
	if code == 0 {
		t.Fatalf("agentmesh run accepted the bad pipeline")
	}
	// the CLI says which run failed around the mesh's own message
	for _, line := range strings.Split(strings.TrimSpace(shown), "\n") {
		if !strings.Contains(cliErr, strings.TrimSpace(line)) {
			t.Errorf("the paste box says %q, which agentmesh run does not:\n%s", line, cliErr)
		}
	}
	if !strings.Contains(shown, `unknown agent "ImageSerchAgent"`) {
		t.Errorf("the paste box does not name the unknown agent: %s", shown)
	}
}

// sunsetsPipeline: examples/pipelines/sunsets.yaml submitted from the
// paste box; every step of its DAG turns completed, the organize step shows
// the sunset folder, the runs list shows the run completed.
func (s *dashSession) sunsetsPipeline(t *testing.T) {
	s.submit(t, examplePipeline(t, "sunsets.yaml"))
	for _, step := range []string{"search", "analyze", "organize"} {
		waitFor(t, s.tab, 60*time.Second, "step "+step, `#dag g.node[data-step="`+step+`"][data-state="completed"]`)
	}
	waitFor(t, s.tab, 30*time.Second, "the run's end", `#run-status[data-status="completed"]`)
	if err := chromedp.Do(s.tab, chromedp.Click(chromedp.CSS(`#dag g.node[data-step="organize"]`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s.tab, 10*time.Second, "the organize step's folders", `#step-panel [data-folder="sunset"]`)
	screenshot(t, s.tab, s.shots, "run.png")
	if err := chromedp.Do(s.tab, chromedp.Navigate(s.base+"/#/runs")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s.tab, 10*time.Second, "the runs list", `#runs tr[data-status="completed"]`)
	screenshot(t, s.tab, s.shots, "runs.png")
}

// approvalAndInput: the run page changes only by the run's events here:
// each step that waits for a person gets its buttons as the run reaches it,
// and answering them finishes the run.
func (s *dashSession) approvalAndInput(t *testing.T) {
	s.submit(t, examplePipeline(t, "approval.yaml"))
	waitFor(t, s.tab, 30*time.Second, "the review step waiting", `#dag g.node[data-step="review"][data-state="waiting"]`)
	screenshot(t, s.tab, s.shots, "approval-waiting.png")
	err := browsertest.Do(s.tab,
		chromedp.Click(chromedp.CSS(`#dag g.node[data-step="review"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#step-actions button.approve`)),
		chromedp.Click(chromedp.CSS(`#step-actions button.approve`)))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, s.tab, 30*time.Second, "the title step waiting", `#dag g.node[data-step="title"][data-state="waiting"]`)
	err = browsertest.Do(s.tab,
		chromedp.Click(chromedp.CSS(`#dag g.node[data-step="title"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#step-input`)),
		chromedp.SendKeys(chromedp.CSS(`#step-input`), "Sunsets of the quarter"),
		chromedp.Click(chromedp.CSS(`#step-actions button`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"draft", "review", "title", "publish"} {
		waitFor(t, s.tab, 30*time.Second, "step "+step, `#dag g.node[data-step="`+step+`"][data-state="completed"]`)
	}
	waitFor(t, s.tab, 10*time.Second, "the run's end", `#run-status[data-status="completed"]`)
}

// waves: steps of one wave side by side, waves top to bottom, each
// coloured by its state; the picture in the README
// (AGENTMESH_UPDATE_SCREENSHOT=1 writes docs/img/runs.png).
func (s *dashSession) waves(t *testing.T) {
	s.submit(t, wavesPipeline)
	waitFor(t, s.tab, 30*time.Second, "the review step waiting", `#dag g.node[data-step="review"][data-state="waiting"]`)
	tops, err := chromedp.Run(s.tab, chromedp.Evaluate[map[string]float64](`Object.fromEntries([...document.querySelectorAll("#dag g.node")].map((g) => [g.dataset.step, g.getBoundingClientRect().top]))`))
	if err != nil {
		t.Fatal(err)
	}
	if tops["search"] != tops["note"] || tops["analyze"] != tops["count"] || !(tops["note"] < tops["count"] && tops["count"] < tops["organize"] && tops["organize"] < tops["review"]) {
		t.Errorf("steps are not drawn wave by wave, top to bottom: %v", tops)
	}
	err = chromedp.Do(s.tab,
		chromedp.Click(chromedp.CSS(`#dag g.node[data-step="review"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#step-actions button.approve`)))
	if err != nil {
		t.Fatal(err)
	}
	screenshot(t, s.tab, s.shots, "waves.png")
	if os.Getenv("AGENTMESH_UPDATE_SCREENSHOT") != "" {
		saveRunsScreenshot(t, s.tab)
	}
}

// liveLists: the runs and conversations lists, left open, gain a run
// submitted and a conversation started elsewhere (here, by the HTTP API) as
// the mesh's events arrive.
func (s *dashSession) liveLists(t *testing.T) {
	spec := examplePipeline(t, "sunsets.yaml")
	if err := chromedp.Do(s.tab, chromedp.Navigate(s.base+"/#/runs"), chromedp.WaitReady(chromedp.CSS("#runs table"))); err != nil {
		t.Fatal(err)
	}
	postAPI(t, s.base+"/api/pipelines?run_id=submitted-elsewhere", "application/yaml", spec)
	waitFor(t, s.tab, 30*time.Second, "the run submitted elsewhere", `#runs tr[data-run="submitted-elsewhere"][data-status="completed"]`)

	if err := chromedp.Do(s.tab, chromedp.Navigate(s.base+"/#/conversations"), chromedp.WaitReady(chromedp.CSS("#conversations table"))); err != nil {
		t.Fatal(err)
	}
	postAPI(t, s.base+"/api/chat", "application/json", `{"conversation_id": "asked-elsewhere", "new": true, "message": "`+seedChat+`"}`)
	waitFor(t, s.tab, 30*time.Second, "the conversation started elsewhere", `#conversations tr[data-conversation="asked-elsewhere"]`)
}

// submit pastes spec into the submit page's box and submits it.
func (s *dashSession) submit(t *testing.T, spec string) {
	t.Helper()
	err := chromedp.Do(s.tab,
		chromedp.Navigate(s.base+"/#/submit"),
		chromedp.WaitVisible(chromedp.CSS("#pipeline-yaml")),
		chromedp.SetValue(chromedp.CSS("#pipeline-yaml"), spec),
		chromedp.Click(chromedp.CSS("#pipeline-submit")))
	if err != nil {
		t.Fatal(err)
	}
}

// examplePipeline is the text of examples/pipelines/NAME.
func examplePipeline(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "pipelines", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// postAPI posts body to url and fails the test unless it is accepted.
func postAPI(t *testing.T, url, contentType, body string) {
	t.Helper()
	resp, err := http.Post(url, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %s %s", url, resp.Status, msg)
	}
}

// token: a gateway that requires a token; without one the page asks for
// it, and the link `up --secure` prints gives it.
func (s *dashSession) token(t *testing.T) {
	const token = "dashboard-test-token"
	secured := s.mesh.gateway(t, gateway.WithToken(token, s.mesh.srv.Conn(t), bus.Identity{}))
	err := chromedp.Do(s.tab,
		chromedp.Navigate(secured+"/#/agents"),
		chromedp.WaitVisible(chromedp.CSS("#token-form")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#token-form button")))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, s.tab, 15*time.Second, "the agents with the typed token", `section.agent[data-agent="FolderAgent"]`)
	err = chromedp.Do(s.tab,
		chromedp.Evaluate[chromedp.Void](`localStorage.clear()`),
		chromedp.Navigate(secured+"/?access_token="+token+"#/runs"))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, s.tab, 15*time.Second, "the runs with the link's token", `#runs tr[data-status="completed"]`)
	if loc, err := chromedp.Run(s.tab, chromedp.Location()); err != nil || strings.Contains(loc, token) {
		t.Errorf("the address bar still shows the token: %s (%v)", loc, err)
	}
}

// files: the object store by folder, with thumbnails and a preview.
func (s *dashSession) files(t *testing.T) {
	if err := chromedp.Do(s.tab, chromedp.Navigate(s.base+"/#/files")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s.tab, 15*time.Second, "the sunset folder", `.folder-nav [data-folder="sunset"]`)
	waitFor(t, s.tab, 15*time.Second, "an image thumbnail", `#files button.file img`)
	if err := chromedp.Do(s.tab, chromedp.Click(chromedp.CSS(`#files button.file`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s.tab, 15*time.Second, "the preview", `#preview img.full`)
	screenshot(t, s.tab, s.shots, "files.png")
}

// wavesPipeline has two steps in each of its first two waves and ends
// waiting for a person.
const wavesPipeline = `name: sunset-report
steps:
  - {id: search,   agent: ImageSearchAgent, params: {query: sunset}}
  - {id: note,     agent: TextAgent, params: {op: upper}, inputs: {text: "text:sunsets of the quarter"}}
  - {id: analyze,  agent: AnalysisAgent, depends_on: [search]}
  - {id: count,    agent: TextAgent, params: {op: wordcount}, depends_on: [note]}
  - {id: organize, agent: FolderAgent, depends_on: [analyze]}
  - id: review
    kind: approval
    depends_on: [organize, count]
    timeout_ms: 600000
    human: {prompt: "Publish the sunset folder?", default: reject}
`

// dashMesh is the mesh the browser test looks at.
type dashMesh struct{ srv *bustest.Server }

// gateway serves the mesh's API and dashboard from this process with opts
// until the test ends, and returns its base URL.
func (m dashMesh) gateway(t *testing.T, opts ...gateway.Option) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gw, err := gateway.New(ctx, m.srv.Conn(t), append([]gateway.Option{gateway.WithValidator(orchestrator.ValidatePipeline)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	hs := httptest.NewServer(gw)
	t.Cleanup(func() {
		hs.CloseClientConnections() // event streams the page left open
		hs.Close()
	})
	return hs.URL
}

// saveRunsScreenshot writes the README's picture of the runs page,
// docs/img/runs.png (AGENTMESH_UPDATE_SCREENSHOT=1 go test -run
// TestDashboardInBrowser ./cmd/agentmesh).
func saveRunsScreenshot(t *testing.T, tab context.Context) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", "img", "runs.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// dashboardMesh runs the mesh the browser test looks at: an embedded NATS
// server holding the sample images and `agentmesh up` on it (the
// orchestrator and every built-in agent as child processes, the
// orchestrator's LLM scripted for the seed chat). Its gateways run in this
// process (dashMesh.gateway).
func dashboardMesh(t *testing.T) dashMesh {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := bustest.Start(t)
	res := srv.Provision(t)
	files := resolvers.NewObjectStore(res.Files)
	for _, s := range samples.Images() {
		if _, err := files.Store(ctx, bytes.NewReader(s.Content), s.MediaType, s.Metadata()); err != nil {
			t.Fatalf("store sample %s: %v", s.Name, err)
		}
	}
	model := llmtest.New(t)
	model.Handle(seedChatScript)
	up := exec.Command(agentBinary(t), "up", "--nats", srv.URL(), "--http", "")
	up.Env = append(cleanEnv(), "OPENAI_BASE_URL="+model.URL(), "OPENAI_API_KEY=test", "AGENTMESH_MODEL=scripted")
	startUntilReady(t, up, "mesh is up on")
	return dashMesh{srv: srv}
}

// seedChatScript is the orchestrator's model for the seed chat: search
// for sunsets, categorise what was found, file the categories into folders,
// answer; each reply chosen by how many tool results the request carries.
func seedChatScript(r llmtest.Request) llmtest.Reply {
	users := r.MessagesOf("user")
	if len(users) == 0 || !strings.Contains(users[0].Content, seedChat) {
		return llmtest.Answer("unexpected request: the script only knows the seed chat")
	}
	switch len(r.MessagesOf("tool")) {
	case 0:
		return llmtest.Calls(llmtest.Call("ImageSearchAgent", map[string]any{"query": "sunset"}))
	case 1:
		return llmtest.Calls(llmtest.Call("AnalysisAgent", map[string]any{}))
	case 2:
		return llmtest.Calls(llmtest.Call("FolderAgent", map[string]any{"categories": "†state.current_categorization"}))
	default:
		return llmtest.Answer("I found your sunset photos and put them in the sunset folder.")
	}
}
