package gateway

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// textSpec is a one-step pipeline named name that TextAgent runs.
func textSpec(name string) string {
	return "name: " + name + "\nsteps:\n  - {id: up, agent: TextAgent, params: {op: upper}, inputs: {text: \"text:" + name + "\"}}\n"
}

// runToEnd submits spec as run id and waits for the run's end.
func (m *testMesh) runToEnd(t *testing.T, id, spec string) {
	t.Helper()
	events := m.openSSE(t, "/api/runs/"+id+"/events")
	if r := m.do(t, "POST", "/api/pipelines?run_id="+id, "application/yaml", []byte(spec)); r.status != 202 {
		t.Fatalf("submit %s: %d %s", id, r.status, clip(r.body))
	}
	waitEvent(t, events, "io.agentmesh.pipeline.completed", nil)
}

// listIDs gets a list and returns its ids in order and X-Total-Count.
func (m *testMesh) listIDs(t *testing.T, path string) ([]string, string) {
	t.Helper()
	r := m.getJSON(t, path)
	if r.status != 200 {
		t.Fatalf("GET %s: %d %s", path, r.status, clip(r.body))
	}
	var items []struct {
		ID string `json:"id"`
	}
	decode(t, r, &items)
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	return ids, r.header.Get("X-Total-Count")
}

// TestListRunsQuery searches, filters, sorts and pages the runs list on
// the server: each query answers exactly the runs it names, in order, and
// X-Total-Count counts every run that matches, not only the page.
func TestListRunsQuery(t *testing.T) {
	m := newTestMesh(t)
	before := time.Now().UTC()
	for _, id := range []string{"alpha-1", "alpha-2", "beta-1"} {
		m.runToEnd(t, id, textSpec(strings.TrimSuffix(strings.TrimSuffix(id, "-1"), "-2")))
	}
	m.startGate(t, "gate-q")

	for _, c := range []struct {
		query string
		want  []string
		total string
	}{
		{"", []string{"gate-q", "beta-1", "alpha-2", "alpha-1"}, "4"},
		{"?q=ALPHA", []string{"alpha-2", "alpha-1"}, "2"},
		{"?q=alpha+2", []string{"alpha-2"}, "1"},
		{"?name=beta", []string{"beta-1"}, "1"},
		{"?status=waiting", []string{"gate-q"}, "1"},
		{"?status=running", []string{"gate-q"}, "1"},
		{"?status=completed,failed", []string{"beta-1", "alpha-2", "alpha-1"}, "3"},
		{"?status=failed", []string{}, "0"},
		{"?agent=TextAgent&sort=id", []string{"alpha-1", "alpha-2", "beta-1"}, "3"},
		{"?agent=FolderAgent", []string{}, "0"},
		{"?sort=-id", []string{"gate-q", "beta-1", "alpha-2", "alpha-1"}, "4"},
		{"?sort=name&limit=2", []string{"alpha-2", "alpha-1"}, "4"}, // ties: most recently written first
		{"?sort=id&limit=2&offset=2", []string{"beta-1", "gate-q"}, "4"},
		{"?limit=1&offset=1", []string{"beta-1"}, "4"},
		{"?limit=2&offset=9", []string{}, "4"},
		{"?q=alpha&limit=1&offset=1", []string{"alpha-1"}, "2"},
		{"?since=" + before.Format(time.RFC3339Nano), []string{"gate-q", "beta-1", "alpha-2", "alpha-1"}, "4"},
		{"?since=" + before.Add(time.Hour).Format(time.RFC3339), []string{}, "0"},
		{"?until=" + before.Format(time.RFC3339Nano), []string{}, "0"},
		{"?since=1h&status=completed&agent=TextAgent&q=beta", []string{"beta-1"}, "1"},
	} {
		ids, total := m.listIDs(t, "/api/runs"+c.query)
		if !slices.Equal(ids, c.want) || total != c.total {
			t.Errorf("GET /api/runs%s: %v (X-Total-Count %s), want %v (%s)", c.query, ids, total, c.want, c.total)
		}
	}

	var runs []map[string]any
	decode(t, m.getJSON(t, "/api/runs?name=beta"), &runs)
	if fmt.Sprint(runs[0]["agents"]) != "[TextAgent]" {
		t.Errorf("run beta-1 lists agents %v, want [TextAgent]", runs[0]["agents"])
	}

	for _, c := range []struct{ query, names string }{
		{"?status=done", "done"},
		{"?sort=colour", "colour"},
		{"?since=yesterday", "yesterday"},
		{"?until=-5m", "-5m"},
		{"?offset=-1", "-1"},
	} {
		msg := wantError(t, "GET /api/runs"+c.query, m.getJSON(t, "/api/runs"+c.query), 400, schemas.CodeInvalidRequest)
		if !strings.Contains(msg, c.names) {
			t.Errorf("GET /api/runs%s: the message %q does not name %q", c.query, msg, c.names)
		}
	}
}

// TestListConversationsQuery searches, filters (by the latest turn's
// state and agents), sorts and pages the conversations list, and refuses
// what only runs take.
func TestListConversationsQuery(t *testing.T) {
	m := newTestMesh(t)
	for _, c := range []struct{ id, message string }{
		{"c-upper", "uppercase the text hello world"},
		{"c-sunset", "find sunset images"},
		{"c-count", "count the words in hello world"},
	} {
		events := m.openSSE(t, "/api/conversations/"+c.id+"/events")
		if r := m.postJSON(t, "/api/chat", `{"conversation_id":"`+c.id+`","new":true,"message":"`+c.message+`"}`); r.status != 202 {
			t.Fatalf("chat %s: %d %s", c.id, r.status, clip(r.body))
		}
		waitEvent(t, events, "io.agentmesh.chat.responded", nil)
	}
	for _, c := range []struct {
		query string
		want  []string
		total string
	}{
		{"?q=hello", []string{"c-count", "c-upper"}, "2"},
		{"?q=hello+count", []string{"c-count"}, "1"},
		{"?q=c-sunset", []string{"c-sunset"}, "1"},
		{"?sort=id", []string{"c-count", "c-sunset", "c-upper"}, "3"},
		{"?sort=id&limit=1&offset=1", []string{"c-sunset"}, "3"},
		{"?since=1h&sort=-id&limit=2", []string{"c-upper", "c-sunset"}, "3"},
	} {
		ids, total := m.listIDs(t, "/api/conversations"+c.query)
		if !slices.Equal(ids, c.want) || total != c.total {
			t.Errorf("GET /api/conversations%s: %v (X-Total-Count %s), want %v (%s)", c.query, ids, total, c.want, c.total)
		}
	}
	// By the latest turn's state and agents: exactly the conversations
	// whose summaries say so (how the offline planner answers the others
	// is its own affair); the sunset search completed with ImageSearchAgent.
	var all []state.ConversationSummary
	decode(t, m.getJSON(t, "/api/conversations?sort=id"), &all)
	byState, byAgent := map[string][]string{}, map[string][]string{}
	for _, c := range all {
		byState[c.State] = append(byState[c.State], c.ID)
		for _, a := range c.Agents {
			byAgent[a] = append(byAgent[a], c.ID)
		}
		if c.ID == "c-sunset" && (c.State != "completed" || !slices.Equal(c.Agents, []string{"ImageSearchAgent"})) {
			t.Errorf("c-sunset's summary: %+v, want state completed, agents [ImageSearchAgent]", c)
		}
	}
	for _, st := range []string{"running", "input_required", "completed", "step_limit_reached", "failed"} {
		if ids, _ := m.listIDs(t, "/api/conversations?sort=id&status="+st); !slices.Equal(ids, byState[st]) {
			t.Errorf("?status=%s: %v, want %v", st, ids, byState[st])
		}
	}
	if ids, _ := m.listIDs(t, "/api/conversations?sort=id&agent=ImageSearchAgent"); !slices.Equal(ids, byAgent["ImageSearchAgent"]) || !slices.Contains(ids, "c-sunset") {
		t.Errorf("?agent=ImageSearchAgent: %v, want %v with c-sunset", ids, byAgent["ImageSearchAgent"])
	}
	for _, q := range []string{"?status=waiting", "?name=x", "?sort=steps"} {
		wantError(t, "GET /api/conversations"+q, m.getJSON(t, "/api/conversations"+q), 400, schemas.CodeInvalidRequest)
	}
}
