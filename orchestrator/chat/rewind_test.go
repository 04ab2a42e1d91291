package chat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// conversationKeys reads every key of conversation conv, with its value.
func conversationKeys(t *testing.T, m *meshtest.Mesh, conv string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	l, err := m.Res.Conversations.ListKeysFiltered(ctx, conv, conv+".>")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for k := range l.Keys() {
		e, err := m.Res.Conversations.Get(ctx, k)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		out[k] = slices.Clone(e.Value())
	}
	return out
}

// rewindTurn sends message as the first turn of conversation to, rewound
// from conversation from before its turn turn.
func rewindTurn(t *testing.T, m *meshtest.Mesh, to, from string, turn int, message string) schemas.ChatResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, _, err := client.Turn(ctx, m.Srv.JetStream(t), m.Srv.Names(), to, message, "test", nil, nil, client.WithRewind(from, turn))
	if err != nil {
		t.Fatalf("rewound turn: %v", err)
	}
	return resp
}

// TestRewindConversation rewinds a three-turn conversation to before its
// third turn: the new conversation's turn is its third, the model reads
// the first two turns and not the third, the slots are those the
// original had before its third turn, the origin is recorded, and not a
// byte of the original changes. Rewinds that cannot be are refused with
// the reason.
func TestRewindConversation(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	seedAgents(t, m, nil)
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": "q3:sunset"})), llmtest.Answer("found three"),
		llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": "q5:beach"})), llmtest.Answer("found five"),
		llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": "q7:snow"})), llmtest.Answer("found seven"),
		llmtest.Answer("rewound answer"),
	)
	chatReplica(t, m, nil, []string{"ImageSearch", "ImageAnalysis", "FolderOrganizer"}, chat.WithLLM(newLLM(t, srv)))

	conv, resp, _ := ask(t, m, "", "find sunsets")
	if resp.Output != "found three" {
		t.Fatalf("turn 1: %+v", resp)
	}
	if _, resp, _ = ask(t, m, conv, "find beaches"); resp.Output != "found five" {
		t.Fatalf("turn 2: %+v", resp)
	}
	before, _ := json.Marshal(conversation(t, m, conv).Slots)
	if _, resp, _ = ask(t, m, conv, "find snow"); resp.Output != "found seven" {
		t.Fatalf("turn 3: %+v", resp)
	}
	after, _ := json.Marshal(conversation(t, m, conv).Slots)
	if jsonEqual(before, after) {
		t.Fatalf("the third turn changed no slot; the test needs it to")
	}
	keys := conversationKeys(t, m, conv)

	resp = rewindTurn(t, m, conv+"-again", conv, 3, "count what we have")
	if resp.State != schemas.ChatCompleted || resp.Output != "rewound answer" || resp.ConversationID != conv+"-again" {
		t.Fatalf("rewound turn: %+v", resp)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	var users []string
	for _, msg := range last.MessagesOf("user") {
		users = append(users, msg.Content)
	}
	if want := []string{"find sunsets", "find beaches", "count what we have"}; !slices.Equal(users, want) {
		t.Errorf("the model read user messages %q, want %q", users, want)
	}
	for _, msg := range last.Body.Messages {
		if strings.Contains(msg.Content, "found seven") || strings.Contains(msg.Content, "q7") || strings.Contains(msg.Content, "find snow") {
			t.Errorf("the model read the third turn: %s: %s", msg.Role, msg.Content)
		}
	}
	st := conversation(t, m, conv+"-again")
	if st.Turns != 3 || st.Origin == nil || *st.Origin != (schemas.ChatRewind{ConversationID: conv, Turn: 3}) {
		t.Errorf("rewound conversation: %d turns, origin %+v", st.Turns, st.Origin)
	}
	if got, _ := json.Marshal(st.Slots); !jsonEqual(got, before) {
		t.Errorf("rewound conversation's slots %s, want the original's before its third turn %s", got, before)
	}
	if n := len(st.History); n == 0 || st.History[n-1].Text != "rewound answer" {
		t.Errorf("rewound conversation's history ends %+v", st.History[max(0, n-1):])
	}
	now := conversationKeys(t, m, conv)
	if len(now) != len(keys) {
		t.Errorf("the original's keys: %d before the rewind, %d after", len(keys), len(now))
	}
	for k, b := range keys {
		if !bytes.Equal(now[k], b) {
			t.Errorf("the original's key %s changed", k)
		}
	}

	for _, c := range []struct {
		to, from string
		turn     int
		code     string
		want     string
	}{
		{conv + "-late", conv, 9, schemas.CodeInvalidRequest, "has turns 1 to 3"},
		{conv, conv, 1, schemas.CodeInvalidRequest, "a rewind starts a new conversation"},
		{conv + "-none", "nope", 1, schemas.CodeNotFound, `no conversation "nope"`},
	} {
		resp := rewindTurn(t, m, c.to, c.from, c.turn, "again")
		if resp.State != schemas.ChatFailed || resp.Code != c.code || !strings.Contains(resp.Error, c.want) {
			t.Errorf("rewind of %s to turn %d into %s: %+v, want failed %s with %q", c.from, c.turn, c.to, resp, c.code, c.want)
		}
	}
}
