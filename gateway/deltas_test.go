package gateway

import (
	"encoding/json"
	"testing"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// publishDeltas sends pieces of a model's text for conversation conv as
// the orchestrator does: core NATS on mesh.delta.<conv>.
func (m *testMesh) publishDeltas(t *testing.T, conv string, pieces ...schemas.ChatDelta) {
	t.Helper()
	nc := m.srv.Conn(t)
	for _, d := range pieces {
		d.ConversationID = conv
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.Publish(m.srv.Names().Deltas(conv), raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestConversationDeltas: a conversation's event stream (?deltas=true, as
// by default) carries the pieces of text the model writes as
// io.agentmesh.delta events whose data is the ChatDelta, in order, gaps
// and all, without an id a reconnection would resume after; one opened
// with ?deltas=false carries none.
func TestConversationDeltas(t *testing.T) {
	m := newTestMesh(t)
	with := m.openSSE(t, "/api/conversations/c-delta/events?deltas=true&from=now")
	without := m.openSSE(t, "/api/conversations/c-delta/events?deltas=false&from=now")
	m.publishDeltas(t, "c-delta",
		schemas.ChatDelta{Turn: 1, Step: 1, Seq: 1, Text: "I found "},
		schemas.ChatDelta{Turn: 1, Step: 1, Seq: 2, Text: "12 sunset"},
		schemas.ChatDelta{Turn: 1, Step: 1, Seq: 4, Text: " photos."})
	m.publishDeltas(t, "another", schemas.ChatDelta{Turn: 1, Step: 1, Seq: 1, Text: "not this one"})
	var got []schemas.ChatDelta
	for len(got) < 3 {
		ev := waitEvent(t, with, TypeDelta, nil)
		if ev.ID != "" {
			t.Fatalf("a delta event with id %q: %s", ev.ID, ev.Raw)
		}
		var d schemas.ChatDelta
		if err := json.Unmarshal([]byte(ev.Raw), &d); err != nil {
			t.Fatal(err)
		}
		got = append(got, d)
	}
	text := ""
	for i, d := range got {
		if d.ConversationID != "c-delta" || d.Turn != 1 || d.Step != 1 || d.Seq != []int{1, 2, 4}[i] {
			t.Errorf("piece %d: %+v", i, d)
		}
		text += d.Text
	}
	if text != "I found 12 sunset photos." {
		t.Errorf("the pieces say %q", text)
	}

	// The stream without deltas: the chat turn's events come, no piece
	// before them.
	if r := m.postJSON(t, "/api/chat", `{"conversation_id":"c-delta","new":true,"message":"find sunset images"}`); r.status != 202 {
		t.Fatalf("chat: %d %s", r.status, clip(r.body))
	}
	for {
		ev := nextEvent(t, without)
		if ev.Type == TypeDelta {
			t.Fatalf("a stream with ?deltas=false carried a piece: %s", ev.Raw)
		}
		if ev.Type == bus.TypeChatResponded {
			break
		}
	}
	msg := wantError(t, "?deltas=maybe", m.getJSON(t, "/api/conversations/c-delta/events?deltas=maybe"), 400, schemas.CodeInvalidRequest)
	if msg != "?deltas=maybe: give true or false" {
		t.Errorf("?deltas=maybe: %q", msg)
	}
}
