package gateway

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentmesh/agentmesh/internal/memory"
)

// TestMemoryAPI: GET /api/memory lists one identity's remembered facts
// (or everyone's), forget removes one, and a fact that is gone, or a bad
// identity, gets a clear error.
func TestMemoryAPI(t *testing.T) {
	m := newTestMesh(t)
	store := memory.New(m.srv.JetStream(t), m.srv.Names())
	ctx := context.Background()
	f, err := store.Remember(ctx, memory.Fact{Identity: "alice", Text: "Alice works in Berlin", Source: "remember"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Remember(ctx, memory.Fact{Identity: "bob", Text: "Bob likes tea", Source: "remember"}); err != nil {
		t.Fatal(err)
	}
	var facts []memory.Fact
	r := m.getJSON(t, "/api/memory?identity=alice")
	if r.status != 200 || json.Unmarshal(r.body, &facts) != nil || len(facts) != 1 || facts[0].ID != f.ID || facts[0].Text != f.Text {
		t.Fatalf("alice's memory: %d %s", r.status, r.body)
	}
	facts = nil
	if r := m.getJSON(t, "/api/memory"); r.status != 200 || json.Unmarshal(r.body, &facts) != nil || len(facts) != 2 {
		t.Fatalf("all memory: %d %s", r.status, r.body)
	}
	if r := m.postJSON(t, "/api/memory/alice/"+f.ID+"/forget", ""); r.status != 200 {
		t.Fatalf("forget: %d %s", r.status, r.body)
	}
	if left, err := store.List(ctx, "alice"); err != nil || len(left) != 0 {
		t.Errorf("alice's facts after forget: %+v, %v", left, err)
	}
	wantError(t, "forget again", m.postJSON(t, "/api/memory/alice/"+f.ID+"/forget", ""), 404, "not_found")
	wantError(t, "a bad identity", m.getJSON(t, "/api/memory?identity=a.b"), 400, "invalid_id")
}
