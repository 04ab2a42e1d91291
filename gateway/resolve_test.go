package gateway

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestApproveAndInputAPI runs a pipeline whose approval and input steps
// wait for a person, and answers them over HTTP.
func TestApproveAndInputAPI(t *testing.T) {
	m := newTestMesh(t)
	spec := `name: approval
steps:
  - {id: draft, agent: TextAgent, params: {op: upper}, inputs: {text: "text:quarterly report ready"}}
  - {id: review, kind: approval, depends_on: [draft], timeout_ms: 600000, human: {prompt: "Publish?", default: reject}}
  - {id: title, kind: input, depends_on: [review], timeout_ms: 600000, human: {prompt: "Title?"}}
  - {id: publish, agent: TextAgent, params: {op: wordcount}, depends_on: [title]}
`
	r := m.do(t, "POST", "/api/pipelines?run_id=appr-1", "application/yaml", []byte(spec))
	if r.status != 202 {
		t.Fatalf("submit: %d %s", r.status, clip(r.body))
	}
	events := m.openSSE(t, "/api/runs/appr-1/events")
	waitEvent(t, events, "io.agentmesh.pipeline.step.waiting", func(ev sseEvent) bool { return ev.Data["stepid"] == "review" })

	wantError(t, "input to an approval", m.postJSON(t, "/api/runs/appr-1/steps/review/input", `{"value":"x"}`), 400, schemas.CodeInvalidInput)
	wantError(t, "approve an input step", m.postJSON(t, "/api/runs/appr-1/steps/title/approve", `{}`), 400, schemas.CodeInvalidInput)
	wantError(t, "input to a step that does not wait yet", m.postJSON(t, "/api/runs/appr-1/steps/title/input", `{"value":"early"}`), 409, schemas.CodeNotWaiting)
	wantError(t, "approve in an unknown run", m.postJSON(t, "/api/runs/nope/steps/review/approve", `{}`), 409, schemas.CodeNotWaiting)
	wantError(t, "input without value", m.postJSON(t, "/api/runs/appr-1/steps/title/input", `{}`), 400, schemas.CodeInvalidInput)
	wantError(t, "bad step id", m.postJSON(t, "/api/runs/appr-1/steps/a.b/approve", `{}`), 400, schemas.CodeInvalidID)
	wantError(t, "unknown field", m.postJSON(t, "/api/runs/appr-1/steps/review/approve", `{"rejected":true}`), 400, schemas.CodeMalformedEvent)

	r = m.postJSON(t, "/api/runs/appr-1/steps/review/approve", `{"comment":"ship it","by":"tester"}`)
	var res Resolved
	decode(t, r, &res)
	if r.status != 200 || res.Status != "applied" || res.Step == nil || res.Step.Status != schemas.StepCompleted {
		t.Fatalf("approve: %d %s", r.status, clip(r.body))
	}
	wantError(t, "approve twice", m.postJSON(t, "/api/runs/appr-1/steps/review/approve", `{}`), 409, schemas.CodeNotWaiting)

	waitEvent(t, events, "io.agentmesh.pipeline.step.waiting", func(ev sseEvent) bool { return ev.Data["stepid"] == "title" })
	r = m.postJSON(t, "/api/runs/appr-1/steps/title/input", `{"value":"Q3 results"}`)
	res = Resolved{}
	decode(t, r, &res)
	if r.status != 200 || res.Status != "applied" || res.Step.Status != schemas.StepCompleted {
		t.Fatalf("input: %d %s", r.status, clip(r.body))
	}
	end := waitEvent(t, events, "io.agentmesh.pipeline.completed", nil)
	if dataOf(end)["status"] != "completed" {
		t.Fatalf("run end: %v", end.Data)
	}
}

// TestCancelAPI cancels a run whose step is running (a TextAgent task held
// by delay_ms) and one whose approval waits.
func TestCancelAPI(t *testing.T) {
	m := newTestMesh(t)
	slow := `name: slow
steps:
  - {id: hold, agent: TextAgent, params: {op: upper, delay_ms: 60000}, inputs: {text: "text:x"}, timeout_ms: 120000}
  - {id: after, agent: TextAgent, depends_on: [hold]}
`
	if r := m.do(t, "POST", "/api/pipelines?run_id=slow-1", "application/yaml", []byte(slow)); r.status != 202 {
		t.Fatalf("submit: %d %s", r.status, clip(r.body))
	}
	events := m.openSSE(t, "/api/runs/slow-1/events")
	waitEvent(t, events, "io.agentmesh.pipeline.step.started", func(ev sseEvent) bool { return ev.Data["stepid"] == "hold" })
	// A cancel reaches a task an instance has taken: wait until it is in flight.
	waitInFlight(t, m, "the held task")
	var c Cancelled
	r := m.postJSON(t, "/api/runs/slow-1/cancel", "")
	decode(t, r, &c)
	if r.status != 202 || len(c.Tasks) != 1 || c.Tasks[0] != "hold" {
		t.Fatalf("cancel: %d %s", r.status, clip(r.body))
	}
	failed := waitEvent(t, events, "io.agentmesh.pipeline.step.failed", nil)
	if dataOf(failed)["code"] != schemas.CodeCancelled {
		t.Fatalf("step failed: %v", failed.Data)
	}
	end := waitEvent(t, events, "io.agentmesh.pipeline.completed", nil)
	if dataOf(end)["status"] != "cancelled" || dataOf(end)["code"] != schemas.CodeCancelled {
		t.Fatalf("run end: %v, want cancelled", end.Data)
	}
	// Stored and listed as cancelled too, and ?status=cancelled finds it.
	if r := m.getJSON(t, "/api/runs/slow-1"); !strings.Contains(string(r.body), `"status":"cancelled"`) {
		t.Errorf("GET /api/runs/slow-1: %s, want status cancelled", clip(r.body))
	}
	var listed []map[string]any
	decode(t, m.getJSON(t, "/api/runs?status=cancelled"), &listed)
	if len(listed) != 1 || listed[0]["id"] != "slow-1" || listed[0]["status"] != "cancelled" {
		t.Errorf("GET /api/runs?status=cancelled: %v", listed)
	}

	wait := `name: gate
steps:
  - {id: ok, kind: approval, timeout_ms: 600000, human: {prompt: "Go?"}}
  - {id: go, agent: TextAgent, depends_on: [ok], inputs: {text: "text:y"}}
`
	if r := m.do(t, "POST", "/api/pipelines?run_id=gate-1", "application/yaml", []byte(wait)); r.status != 202 {
		t.Fatalf("submit: %d %s", r.status, clip(r.body))
	}
	events = m.openSSE(t, "/api/runs/gate-1/events")
	waitEvent(t, events, "io.agentmesh.pipeline.step.waiting", nil)
	r = m.postJSON(t, "/api/runs/gate-1/cancel", "")
	c = Cancelled{}
	decode(t, r, &c)
	if r.status != 202 || len(c.Rejected) != 1 || c.Rejected[0] != "ok" {
		t.Fatalf("cancel: %d %s", r.status, clip(r.body))
	}
	end = waitEvent(t, events, "io.agentmesh.pipeline.completed", nil)
	if dataOf(end)["status"] != "cancelled" || dataOf(end)["code"] != schemas.CodeCancelled {
		t.Fatalf("run end: %v, want cancelled", end.Data)
	}
	if r := m.getJSON(t, "/api/runs/gate-1"); !strings.Contains(string(r.body), `"status":"cancelled"`) {
		t.Errorf("GET /api/runs/gate-1: %s, want status cancelled", clip(r.body))
	}
	wantError(t, "unknown run", m.postJSON(t, "/api/runs/nope/cancel", ""), 404, schemas.CodeNotFound)
}

// TestCancelAPISubPipeline cancels a run whose step of kind pipeline runs
// a child whose task is held: the cancel reaches the child's task (named
// sub/hold), the child fails, and so do the step and the run, long before
// the 120 s timeouts.
func TestCancelAPISubPipeline(t *testing.T) {
	m := newTestMesh(t)
	spec := `name: parent
steps:
  - id: sub
    kind: pipeline
    timeout_ms: 120000
    pipeline:
      spec:
        name: held
        steps:
          - {id: hold, agent: TextAgent, params: {op: upper, delay_ms: 60000}, inputs: {text: "text:x"}, timeout_ms: 120000}
  - {id: after, agent: TextAgent, depends_on: [sub], inputs: {text: "text:y"}}
`
	if r := m.do(t, "POST", "/api/pipelines?run_id=nest-1", "application/yaml", []byte(spec)); r.status != 202 {
		t.Fatalf("submit: %d %s", r.status, clip(r.body))
	}
	events := m.openSSE(t, "/api/runs/nest-1/events")
	waitInFlight(t, m, "the child's held task")
	var c Cancelled
	r := m.postJSON(t, "/api/runs/nest-1/cancel", "")
	decode(t, r, &c)
	if r.status != 202 || len(c.Tasks) != 1 || c.Tasks[0] != "sub/hold" {
		t.Fatalf("cancel: %d %s", r.status, clip(r.body))
	}
	failed := waitEvent(t, events, "io.agentmesh.pipeline.step.failed", nil)
	if d := dataOf(failed); d["step"] != "sub" || !strings.Contains(fmt.Sprint(d["error"]), "nest-1-sub") {
		t.Fatalf("step failed: %v", failed.Data)
	}
	end := waitEvent(t, events, "io.agentmesh.pipeline.completed", nil)
	if dataOf(end)["status"] != "cancelled" {
		t.Fatalf("run end: %v, want cancelled (its child was)", end.Data)
	}
}

// waitInFlight waits until TextAgent has one task in flight (taken by an
// instance and not yet acknowledged); what names the task in the failure.
func waitInFlight(t *testing.T, m *testMesh, what string) {
	t.Helper()
	var a Agent
	if !fixture.Within(10*time.Second, func() bool {
		a = Agent{}
		decode(t, m.getJSON(t, "/api/agents/TextAgent"), &a)
		return a.Stats.InFlight != nil && *a.Stats.InFlight == 1
	}) {
		t.Fatalf("%s is not in flight: %+v", what, a.Stats)
	}
}
