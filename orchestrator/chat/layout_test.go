package chat_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// kvWrites counts the writes and bytes to one bucket, as every KV put is a
// message on $KV.<bucket>.<key>.
type kvWrites struct {
	mu            sync.Mutex
	writes, bytes int
	keys          map[string]int
}

func countKVWrites(t *testing.T, nc *nats.Conn, bucket string) *kvWrites {
	t.Helper()
	w := &kvWrites{keys: map[string]int{}}
	if _, err := nc.Subscribe("$KV."+bucket+".>", func(m *nats.Msg) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.writes++
		w.bytes += len(m.Data)
		w.keys[strings.TrimPrefix(m.Subject, "$KV."+bucket+".")] += len(m.Data)
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *kvWrites) take(nc *nats.Conn) (writes, bytes int, keys map[string]int) {
	_ = nc.Flush()
	w.mu.Lock()
	defer w.mu.Unlock()
	writes, bytes, keys = w.writes, w.bytes, w.keys
	w.writes, w.bytes, w.keys = 0, 0, map[string]int{}
	return
}

// A turn writes the same to KV at turn 40 as at turn 2: no key it writes
// holds the conversation's history, and each fact of a turn is stored once
// (the user's message and the answer in the turn's key only).
func TestChatTurnWritesDoNotGrowWithTheConversation(t *testing.T) {
	m := meshtest.New(t)
	m.Agent(t, chatSearchContract(), func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		fc := schemas.FromIDs(schemas.ContentImages, "a", "b")
		return fixture.OK("ImageSearch", "found 2", map[string]schemas.TypedValue{"images": schemas.FilesValue(fc, "ImageSearch")}), nil
	}, 4)
	chatReplica(t, m, nil, []string{"ImageSearch"})
	nc := m.Srv.Conn(t)
	w := countKVWrites(t, nc, m.Res.Conversations.Bucket())
	conv := "flat1"
	per := map[int][2]int{}
	for turn := 1; turn <= 40; turn++ {
		_, r, _ := ask(t, m, conv, "find sunsets")
		if r.State != schemas.ChatCompleted {
			t.Fatalf("turn %d: %s %s", turn, r.State, r.Output)
		}
		writes, bytes, keys := w.take(nc)
		per[turn] = [2]int{writes, bytes}
		if turn == 40 {
			t.Logf("turn 40 writes by key: %v", keys)
		}
	}
	// Ten turns at a time: a write that reaches this subscriber after the
	// turn's answer is counted with the next turn.
	sum := func(from, to int) (w, b int) {
		for n := from; n <= to; n++ {
			w, b = w+per[n][0], b+per[n][1]
		}
		return w, b
	}
	fw, fb := sum(2, 11)
	lw, lb := sum(31, 40)
	t.Logf("turns 2-11: %d writes, %d bytes; turns 31-40: %d writes, %d bytes", fw, fb, lw, lb)
	if float64(lw) > 1.2*float64(fw) || float64(lb) > 1.2*float64(fb) {
		t.Errorf("turns 31-40 wrote %d values, %d bytes; turns 2-11 %d values, %d bytes: a turn's writes grow with the conversation", lw, lb, fw, fb)
	}
	st := conversation(t, m, conv)
	if st.Turns != 40 || len(st.History) != 3*state.MaxAssembledTurns && len(st.History) != 3*40 {
		t.Errorf("conversation: %d turns, %d history entries; want 40 and 3 a turn (user, result, answer)", st.Turns, len(st.History))
	}
	raw, err := m.Res.Conversations.Get(context.Background(), conv)
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]json.RawMessage
	if err := json.Unmarshal(raw.Value(), &stored); err != nil {
		t.Fatal(err)
	}
	if _, ok := stored["history"]; ok {
		t.Errorf("the conversation key stores a history: %s", raw.Value())
	}
}

// A conversation stored by the previous layout (the chat record with every
// turn's model messages in the client's JSON, the answers of the last
// turns, a history in the conversation key) goes on: a redelivered request
// of an old turn gets its answer, and the next turn's prompt shows the old
// turns.
// putPreviousLayoutConversation stores conversation conv as the layout
// before per-turn keys did, with the OpenAI client's message JSON: one turn
// that called ImageSearch, and its answer.
func putPreviousLayoutConversation(t *testing.T, m *meshtest.Mesh, conv string) {
	t.Helper()
	ctx := context.Background()
	old := map[string]any{
		"turns": [][]map[string]any{{
			{"role": "user", "content": "find beach photos"},
			{"role": "assistant", "tool_calls": []map[string]any{{"id": "call_1", "type": "function", "function": map[string]string{"name": "ImageSearch", "arguments": `{"query":"beach"}`}}}},
			{"role": "tool", "tool_call_id": "call_1", "name": "ImageSearch", "content": "found 3 beach photos"},
			{"role": "assistant", "content": "I found 3 beach photos."},
		}},
		"done": []map[string]any{{"request_id": "req-old", "response": schemas.ChatResponse{ConversationID: conv, Output: "I found 3 beach photos.", State: schemas.ChatCompleted}}},
	}
	b, _ := json.Marshal(old)
	if _, err := m.Res.Conversations.Put(ctx, conv+".chat", b); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(map[string]any{"id": conv, "slots": map[string]any{}, "turns": 1,
		"history": []map[string]any{{"kind": "user", "text": "find beach photos"}, {"kind": "assistant", "text": "I found 3 beach photos."}}})
	if _, err := m.Res.Conversations.Put(ctx, conv, b); err != nil {
		t.Fatal(err)
	}
}

func TestChatConversationOfThePreviousLayoutGoesOn(t *testing.T) {
	m := meshtest.New(t)
	ctx := context.Background()
	conv := "legacy1"
	putPreviousLayoutConversation(t, m, conv)
	srv := llmtest.New(t, llmtest.Answer("Nothing more to do."))
	chatReplica(t, m, nil, nil, chat.WithLLM(newLLM(t, srv)))

	// The old request, delivered again, gets its old answer.
	ce := followChat(t, m, conv)
	ev, _, err := client.NewChatRequest(conv, "find beach photos", "test")
	if err != nil {
		t.Fatal(err)
	}
	ev.ID = "req-old"
	if err := client.PublishChatRequest(ctx, m.Srv.JetStream(t), m.Srv.Names(), ev); err != nil {
		t.Fatal(err)
	}
	if r := ce.wait(t, 30*time.Second); r.Output != "I found 3 beach photos." {
		t.Errorf("redelivered old request answered %q", r.Output)
	}
	_, r, _ := ask(t, m, conv, "thanks, anything else?")
	if r.State != schemas.ChatCompleted {
		t.Fatalf("next turn: %s %s", r.State, r.Output)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was not called")
	}
	var shown []string
	for _, msg := range reqs[0].Body.Messages {
		shown = append(shown, msg.Role+":"+msg.Content)
	}
	all := strings.Join(shown, "\n")
	if !strings.Contains(all, "user:find beach photos") || !strings.Contains(all, "tool:found 3 beach photos") {
		t.Errorf("the prompt does not show the old turn:\n%s", all)
	}
	st := conversation(t, m, conv)
	if st.Turns != 2 || len(st.History) != 4 || st.History[0].Text != "find beach photos" || st.History[2].Text != "thanks, anything else?" {
		t.Errorf("conversation after the upgrade: %d turns, history %+v", st.Turns, st.History)
	}
}
