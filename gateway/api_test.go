package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/schemas"
)

// decode unmarshals an answer's body into v.
func decode(t *testing.T, r response, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("answer %d is not JSON: %v: %s", r.status, err, clip(r.body))
	}
}

// wantError checks an error answer's status and code.
func wantError(t *testing.T, what string, r response, status int, code string) string {
	t.Helper()
	var e errorBody
	decode(t, r, &e)
	if r.status != status || e.Error == nil || e.Error.Code != code {
		t.Fatalf("%s: got %d %s, want %d with code %s", what, r.status, clip(r.body), status, code)
	}
	if e.Error.Message == "" {
		t.Fatalf("%s: the error has no message", what)
	}
	return e.Error.Message
}

func TestAgentsAPI(t *testing.T) {
	m := newTestMesh(t)
	r := m.getJSON(t, "/api/agents")
	var list []Agent
	decode(t, r, &list)
	var names []string
	for _, a := range list {
		names = append(names, a.Name)
		if len(a.Instances) != 1 || a.Instances[0].LastHeartbeat.IsZero() || a.Instances[0].Host == "" {
			t.Errorf("agent %s: instances %+v, want one with a host and a last heartbeat", a.Name, a.Instances)
		}
		if a.Stats.Backlog == nil || *a.Stats.Backlog != 0 {
			t.Errorf("agent %s: backlog %v, want 0", a.Name, a.Stats.Backlog)
		}
		if a.Description == "" || a.Contract.Name != a.Name {
			t.Errorf("agent %s: description %q, contract %q", a.Name, a.Description, a.Contract.Name)
		}
	}
	if got := strings.Join(names, ","); got != "AnalysisAgent,FolderAgent,ImageSearchAgent,TextAgent" {
		t.Fatalf("agents %s", got)
	}

	r = m.getJSON(t, "/api/agents/TextAgent")
	var one Agent
	decode(t, r, &one)
	if r.status != 200 || one.Contract.Capability != schemas.CapTransformation || len(one.Contract.Inputs) == 0 {
		t.Fatalf("TextAgent: %d %s", r.status, clip(r.body))
	}
	wantError(t, "unknown agent", m.getJSON(t, "/api/agents/NoSuchAgent"), 404, schemas.CodeUnknownAgent)
	wantError(t, "bad agent name", m.getJSON(t, "/api/agents/bad%20name"), 400, schemas.CodeInvalidInput)
	wantError(t, "unknown path", m.getJSON(t, "/api/nothing"), 404, schemas.CodeNotFound)
	r = m.do(t, "DELETE", "/api/files", "", nil)
	wantError(t, "wrong method", r, 405, schemas.CodeInvalidRequest)
	if r.header.Get("Allow") != "GET, POST" {
		t.Fatalf("Allow: %q", r.header.Get("Allow"))
	}
}

func TestTaskAPI(t *testing.T) {
	m := newTestMesh(t)
	const upper = `{"inputs":{"text":{"data_type":"TEXT","value":"hello mesh"}},"params":{"op":"upper"},"timeout_ms":10000}`
	r := m.postJSON(t, "/api/agents/TextAgent/tasks", upper)
	var ans TaskAnswer
	decode(t, r, &ans)
	if r.status != 200 || ans.TaskID == "" || ans.Result == nil || string(ans.Result.Outputs["text"].Value) != `"HELLO MESH"` {
		t.Fatalf("task: %d %s", r.status, clip(r.body))
	}

	r = m.postJSON(t, "/api/agents/TextAgent/tasks?wait=false", upper)
	ans = TaskAnswer{}
	decode(t, r, &ans)
	if r.status != 202 || ans.TaskID == "" || ans.Result != nil {
		t.Fatalf("task without waiting: %d %s", r.status, clip(r.body))
	}
	// Its result is there to read once the agent answered.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r = m.getJSON(t, "/api/agents/TextAgent/tasks/"+ans.TaskID)
		var got TaskAnswer
		decode(t, r, &got)
		if r.status == 200 {
			if got.Result == nil || string(got.Result.Outputs["text"].Value) != `"HELLO MESH"` {
				t.Fatalf("result of the task: %s", clip(r.body))
			}
			break
		}
		if r.status != 202 || time.Now().After(deadline) {
			t.Fatalf("result of the task: %d %s", r.status, clip(r.body))
		}
	}
	r = m.getJSON(t, "/api/agents/TextAgent/tasks/no-such-task")
	if r.status != 202 {
		t.Fatalf("result of an unknown task: %d %s", r.status, clip(r.body))
	}
	wantError(t, "bad task id", m.getJSON(t, "/api/agents/TextAgent/tasks/a.b"), 400, schemas.CodeInvalidID)

	// The agent refuses a task without its required input: the bus's code.
	r = m.postJSON(t, "/api/agents/TextAgent/tasks", `{"params":{"op":"upper"}}`)
	msg := wantError(t, "missing input", r, 400, schemas.CodeInvalidInput)
	var tf taskFailure
	decode(t, r, &tf)
	if tf.TaskID == "" || tf.Result.Success || !strings.Contains(msg, "text") {
		t.Fatalf("missing input: %s", clip(r.body))
	}
	wantError(t, "bad params", m.postJSON(t, "/api/agents/TextAgent/tasks",
		`{"inputs":{"text":{"data_type":"TEXT","value":"x"}},"params":{"op":"shout"}}`), 400, schemas.CodeInvalidParams)
	wantError(t, "unknown agent", m.postJSON(t, "/api/agents/Nobody/tasks", upper), 404, schemas.CodeUnknownAgent)
	wantError(t, "not JSON", m.postJSON(t, "/api/agents/TextAgent/tasks", `{"inputs":`), 400, schemas.CodeMalformedEvent)
	wantError(t, "unknown field", m.postJSON(t, "/api/agents/TextAgent/tasks", `{"input":{}}`), 400, schemas.CodeMalformedEvent)
	wantError(t, "empty body", m.postJSON(t, "/api/agents/TextAgent/tasks", ``), 400, schemas.CodeMalformedEvent)
	wantError(t, "bad wait", m.postJSON(t, "/api/agents/TextAgent/tasks?wait=maybe", upper), 400, schemas.CodeInvalidRequest)
	wantError(t, "negative timeout", m.postJSON(t, "/api/agents/TextAgent/tasks", `{"timeout_ms":-1}`), 400, schemas.CodeInvalidInput)
	big := `{"instruction":"` + strings.Repeat("x", 2<<20) + `"}`
	wantError(t, "body too large", m.postJSON(t, "/api/agents/TextAgent/tasks", big), 413, schemas.CodeTooLarge)

	// The statistics count the results seen: two successes, two failures.
	r = m.getJSON(t, "/api/agents/TextAgent")
	var a Agent
	decode(t, r, &a)
	if a.Stats.Recent < 3 || a.Stats.SuccessRate == nil || *a.Stats.SuccessRate <= 0 || *a.Stats.SuccessRate >= 1 || a.Stats.P50MS == nil {
		t.Fatalf("TextAgent stats after 2 successes and 2 failures: %+v", a.Stats)
	}
	// ... and by version: TextAgent's contract is 1.0.0.
	if len(a.Stats.Versions) != 1 || a.Stats.Versions[0].Version != "1.0.0" || a.Stats.Versions[0].Results != a.Stats.Recent || a.Stats.Versions[0].Failures == 0 {
		t.Fatalf("TextAgent stats by version: %+v", a.Stats.Versions)
	}
	// The agent's rollout is shown beside them.
	b, _ := json.Marshal(schemas.Rollout{Agent: "TextAgent", From: "1.0.0", To: "2.0.0", Weight: 10})
	if _, err := m.res.Rollouts.Put(context.Background(), "TextAgent", b); err != nil {
		t.Fatal(err)
	}
	a = Agent{}
	decode(t, m.getJSON(t, "/api/agents/TextAgent"), &a)
	if r := a.Stats.Rollout; r == nil || r.To != "2.0.0" || r.Weight != 10 {
		t.Fatalf("TextAgent rollout: %+v", r)
	}
}

// TestPipelineAPI validates, submits and follows the sunsets pipeline to
// its graph, then sends bad pipelines. It is long because it is one story,
// submission to graph, on one mesh.
func TestPipelineAPI(t *testing.T) {
	m := newTestMesh(t)
	events := m.openSSE(t, "/api/events")
	reg := waitEvent(t, events, TypeRegistryChanged, nil)
	if agents, _ := dataOf(reg)["agents"].([]any); len(agents) != 4 {
		t.Fatalf("registry event: %v", reg.Data)
	}

	yaml := `name: sunsets
steps:
  - {id: search,   agent: ImageSearchAgent, params: {query: sunset}}
  - {id: analyze,  agent: AnalysisAgent, depends_on: [search]}
  - {id: organize, agent: FolderAgent,   depends_on: [analyze]}
`
	r := m.do(t, "POST", "/api/pipelines/validate", "application/yaml", []byte(yaml))
	var v Validation
	decode(t, r, &v)
	if r.status != 200 || !v.OK || len(v.Waves) != 3 {
		t.Fatalf("validate: %d %s", r.status, clip(r.body))
	}
	r = m.do(t, "POST", "/api/pipelines?run_id=sun-1", "application/yaml", []byte(yaml))
	var acc RunAccepted
	decode(t, r, &acc)
	if r.status != 202 || acc.RunID != "sun-1" {
		t.Fatalf("submit: %d %s", r.status, clip(r.body))
	}
	runEvents := m.openSSE(t, "/api/runs/sun-1/events")
	end := waitEvent(t, runEvents, "io.agentmesh.pipeline.completed", nil)
	if dataOf(end)["status"] != "completed" || end.Data["runid"] != "sun-1" || end.Data["specversion"] != "1.0" {
		t.Fatalf("run end: %v", end.Data)
	}
	waitEvent(t, events, "io.agentmesh.pipeline.completed", func(ev sseEvent) bool { return ev.Data["runid"] == "sun-1" })

	r = m.getJSON(t, "/api/runs/sun-1")
	var run struct {
		Status string                    `json:"status"`
		Waves  [][]string                `json:"waves"`
		Steps  map[string]map[string]any `json:"steps"`
	}
	decode(t, r, &run)
	if run.Status != "completed" || len(run.Waves) != 3 || run.Steps["organize"]["status"] != "completed" || run.Steps["organize"]["outputs"] == nil {
		t.Fatalf("run: %s", clip(r.body))
	}
	r = m.getJSON(t, "/api/runs")
	var runs []map[string]any
	decode(t, r, &runs)
	if len(runs) != 1 || runs[0]["id"] != "sun-1" || r.header.Get("X-Total-Count") != "1" {
		t.Fatalf("runs: %s", clip(r.body))
	}
	r = m.getJSON(t, "/api/runs/sun-1/graph")
	var g Graph
	decode(t, r, &g)
	if len(g.Nodes) != 3 || len(g.Edges) != 2 {
		t.Fatalf("graph: %s", clip(r.body))
	}
	for _, n := range g.Nodes {
		if n.State != "completed" {
			t.Errorf("graph node %s: %s", n.ID, n.State)
		}
	}

	// Bad input: every problem at once, with the CLI's messages.
	bad := `name: bad
steps:
  - {id: a, agent: NoSuchAgent, depends_on: [b]}
  - {id: b, agent: TextAgent, depends_on: [a]}
`
	r = m.do(t, "POST", "/api/pipelines/validate", "application/yaml", []byte(bad))
	wantError(t, "invalid pipeline", r, 400, schemas.CodeInvalidPipeline)
	var ip invalidPipeline
	decode(t, r, &ip)
	joined := strings.Join(ip.Problems, "\n")
	if len(ip.Problems) < 2 || !strings.Contains(joined, "NoSuchAgent") || !strings.Contains(joined, "cycle") {
		t.Fatalf("problems: %q", ip.Problems)
	}
	wantError(t, "invalid pipeline submitted", m.do(t, "POST", "/api/pipelines", "application/yaml", []byte(bad)), 400, schemas.CodeInvalidPipeline)
	wantError(t, "unknown field", m.do(t, "POST", "/api/pipelines", "application/json", []byte(`{"name":"x","stepz":[]}`)), 400, schemas.CodeInvalidPipeline)
	wantError(t, "unknown var", m.do(t, "POST", "/api/pipelines?var=nope=1", "application/yaml", []byte(yaml)), 400, schemas.CodeInvalidPipeline)
	wantError(t, "bad run id", m.do(t, "POST", "/api/pipelines?run_id=a.b", "application/yaml", []byte(yaml)), 400, schemas.CodeInvalidID)
	r = m.do(t, "POST", "/api/pipelines", "text/html", []byte(yaml))
	if r.status != http.StatusUnsupportedMediaType {
		t.Fatalf("text/html pipeline: %d", r.status)
	}
	wantError(t, "unknown run", m.getJSON(t, "/api/runs/nope"), 404, schemas.CodeNotFound)
	wantError(t, "bad run id", m.getJSON(t, "/api/runs/a.b"), 400, schemas.CodeInvalidID)
	wantError(t, "bad limit", m.getJSON(t, "/api/runs?limit=-2"), 400, schemas.CodeInvalidRequest)
	wantError(t, "cancel an ended run", m.postJSON(t, "/api/runs/sun-1/cancel", ""), 409, schemas.CodeNotWaiting)
}

// A task into a full MESH_TASKS (an operator's limit, new messages
// refused) is answered at once with 503 backlog_full and a Retry-After,
// not a failure of the mesh.
func TestTaskIntoAFullStreamIsBacklogFull(t *testing.T) {
	m := newTestMesh(t)
	m.srv.LimitStream(t, m.srv.Names().TasksStream(), 1)
	// A task for an agent nobody serves stays in the stream and fills it.
	subject, err := m.srv.Names().Task("NobodyServesThis")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.srv.JetStream(t).Publish(context.Background(), subject, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	r := m.postJSON(t, "/api/agents/TextAgent/tasks", `{"inputs":{"text":{"data_type":"TEXT","value":"hi"}},"params":{"op":"upper"}}`)
	msg := wantError(t, "task into a full stream", r, http.StatusServiceUnavailable, schemas.CodeBacklogFull)
	if !strings.Contains(msg, "MESH_TASKS") || r.header.Get("Retry-After") == "" {
		t.Errorf("answer %q, Retry-After %q: want the stream named and a Retry-After", msg, r.header.Get("Retry-After"))
	}
}
