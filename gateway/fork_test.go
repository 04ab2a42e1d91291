package gateway

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestForkAPI forks a finished run at its last step over HTTP: the new
// run completes, keeps the steps before it (their records name the
// original) and records its origin, which the runs list shows; forks the
// gateway can refuse at once are refused with the problem named.
func TestForkAPI(t *testing.T) {
	m := newTestMesh(t)
	yaml := `name: sunsets
steps:
  - {id: search,   agent: ImageSearchAgent, params: {query: sunset}}
  - {id: analyze,  agent: AnalysisAgent, depends_on: [search]}
  - {id: organize, agent: FolderAgent,   depends_on: [analyze]}
`
	if r := m.do(t, "POST", "/api/pipelines?run_id=sun-1", "application/yaml", []byte(yaml)); r.status != 202 {
		t.Fatalf("submit: %d %s", r.status, clip(r.body))
	}
	end := waitEvent(t, m.openSSE(t, "/api/runs/sun-1/events"), "io.agentmesh.pipeline.completed", nil)
	if dataOf(end)["status"] != "completed" {
		t.Fatalf("run end: %v", end.Data)
	}

	r := m.postJSON(t, "/api/runs/sun-1/fork?run_id=sun-2", `{"at":"organize"}`)
	var acc RunAccepted
	decode(t, r, &acc)
	if r.status != 202 || acc.RunID != "sun-2" {
		t.Fatalf("fork: %d %s", r.status, clip(r.body))
	}
	end = waitEvent(t, m.openSSE(t, "/api/runs/sun-2/events"), "io.agentmesh.pipeline.completed", nil)
	if d := dataOf(end); d["status"] != "completed" || d["origin"] == nil {
		t.Fatalf("fork's end: %v", end.Data)
	}
	var run struct {
		Status string                    `json:"status"`
		Origin *schemas.RunOrigin        `json:"origin"`
		Steps  map[string]map[string]any `json:"steps"`
	}
	decode(t, m.getJSON(t, "/api/runs/sun-2"), &run)
	if run.Status != "completed" || run.Origin == nil || *run.Origin != (schemas.RunOrigin{Run: "sun-1", Step: "organize"}) {
		t.Fatalf("fork: %+v", run)
	}
	for step, from := range map[string]any{"search": "sun-1", "analyze": "sun-1", "organize": nil} {
		if got := run.Steps[step]["from"]; got != from {
			t.Errorf("fork's step %s from %v, want %v", step, got, from)
		}
	}
	var runs []map[string]any
	decode(t, m.getJSON(t, "/api/runs"), &runs)
	if len(runs) != 2 || runs[0]["id"] != "sun-2" || runs[0]["origin"] == nil || runs[1]["origin"] != nil {
		t.Errorf("runs: %v", runs)
	}

	msg := wantError(t, "no such step", m.postJSON(t, "/api/runs/sun-1/fork", `{"at":"nope"}`), 400, schemas.CodeInvalidPipeline)
	if !strings.Contains(msg, `no step "nope" (its steps: search, analyze, organize)`) {
		t.Errorf("no such step: %s", msg)
	}
	wantError(t, "no at", m.postJSON(t, "/api/runs/sun-1/fork", `{}`), 400, schemas.CodeInvalidPipeline)
	wantError(t, "no such run", m.postJSON(t, "/api/runs/nope/fork", `{"at":"search"}`), 404, schemas.CodeNotFound)
	wantError(t, "unknown field", m.postJSON(t, "/api/runs/sun-1/fork", `{"step":"search"}`), 400, schemas.CodeMalformedEvent)
	wantError(t, "taken run id", m.postJSON(t, "/api/runs/sun-1/fork?run_id=sun-2", `{"at":"search"}`), 409, CodeRunExists)
}

// TestChatRewindAPI rewinds a two-turn conversation to before its second
// turn over HTTP: the new conversation answers its turn and records its
// origin; a rewind of what does not exist is refused at once.
func TestChatRewindAPI(t *testing.T) {
	m := newTestMesh(t)
	var acc ChatAccepted
	for i, msg := range []string{"Find sunset images", "Find beach images"} {
		body := `{"message":"` + msg + `"}`
		if i > 0 {
			body = `{"conversation_id":"` + acc.ConversationID + `","message":"` + msg + `"}`
		}
		r := m.postJSON(t, "/api/chat", body)
		decode(t, r, &acc)
		if r.status != 202 {
			t.Fatalf("turn %d: %d %s", i+1, r.status, clip(r.body))
		}
		fixture.EventuallyWithin(t, 30*time.Second, fmt.Sprintf("turn %d to be answered", i+1), func() bool {
			var c Conversation
			if r := m.getJSON(t, "/api/conversations/"+acc.ConversationID); r.status == 200 {
				decode(t, r, &c)
			}
			return len(c.Turns) == i+1 && c.Turns[i].Response.State != ""
		})
	}
	orig := acc.ConversationID
	events := m.openSSE(t, "/api/conversations/again/events")
	r := m.postJSON(t, "/api/chat", `{"conversation_id":"again","message":"Find mountain images","rewind":{"conversation_id":"`+orig+`","turn":2}}`)
	decode(t, r, &acc)
	if r.status != 202 || acc.ConversationID != "again" {
		t.Fatalf("rewind: %d %s", r.status, clip(r.body))
	}
	if answer := waitEvent(t, events, "io.agentmesh.chat.responded", nil); dataOf(answer)["state"] != "completed" {
		t.Fatalf("rewound turn: %v", answer.Data)
	}
	var conv Conversation
	decode(t, m.getJSON(t, "/api/conversations/again"), &conv)
	var users []string
	for _, h := range conv.History {
		if h.Kind == "user" {
			users = append(users, h.Text)
		}
	}
	if conv.Origin == nil || *conv.Origin != (schemas.ChatRewind{ConversationID: orig, Turn: 2}) ||
		strings.Join(users, "|") != "Find sunset images|Find mountain images" {
		t.Errorf("rewound conversation: origin %+v, user messages %q", conv.Origin, users)
	}
	wantError(t, "no such conversation", m.postJSON(t, "/api/chat", `{"message":"x","rewind":{"conversation_id":"nope","turn":1}}`), 404, schemas.CodeNotFound)
	wantError(t, "turn 0", m.postJSON(t, "/api/chat", `{"message":"x","rewind":{"conversation_id":"`+orig+`","turn":0}}`), 400, schemas.CodeInvalidRequest)
	wantError(t, "into an existing one", m.postJSON(t, "/api/chat", `{"conversation_id":"`+orig+`","message":"x","rewind":{"conversation_id":"`+orig+`","turn":1}}`), 400, schemas.CodeInvalidID)
}
