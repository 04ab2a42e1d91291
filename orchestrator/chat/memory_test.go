package chat_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/memory"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

var convSeq atomic.Int64

// askAs sends message in a new conversation on client who's own request
// subject (who "" sends on the plain subject, with no owner) and returns
// the final response with the conversation's id.
func askAs(t *testing.T, m *meshtest.Mesh, who, message string) (string, schemas.ChatResponse) {
	t.Helper()
	conv := fmt.Sprintf("mem%d", convSeq.Add(1))
	ce := followChat(t, m, conv)
	names := m.Srv.Names()
	if who != "" {
		names = names.ForClient(who)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := client.SendChat(ctx, m.Srv.JetStream(t), names, conv, message, "test"); err != nil {
		t.Fatal(err)
	}
	return conv, ce.wait(t, 30*time.Second)
}

// memoryMessage is the recalled Memory system message of a request ("":
// none).
func memoryMessage(r llmtest.Request) string {
	for _, m := range r.MessagesOf("system") {
		if strings.HasPrefix(m.Content, "Memory:") {
			return m.Content
		}
	}
	return ""
}

// TestMemoryAcrossConversations: alice's turn makes the model call
// remember; her next conversation's prompt recalls the fact, bob's does
// not, and once the fact is removed her later conversations no longer see
// it.
func TestMemoryAcrossConversations(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	ctx := context.Background()
	srv := llmtest.New(t)
	store := memory.New(m.Srv.JetStream(t), m.Srv.Names())
	chatReplica(t, m, nil, nil, chat.WithLLM(newLLM(t, srv)), chat.WithMemory(store))
	const fact = "Alice's favourite colour is teal"

	srv.Enqueue(llmtest.Calls(llmtest.Call(chat.RememberTool, map[string]any{"fact": fact})), llmtest.Answer("Noted."))
	convA, resp := askAs(t, m, "alice", "Please remember that my favourite colour is teal")
	if resp.State != schemas.ChatCompleted || len(resp.ToolCalls) != 1 || !resp.ToolCalls[0].Success || resp.ToolCalls[0].Agent != chat.RememberTool {
		t.Fatalf("turn A = %+v", resp)
	}
	reqs := srv.Requests()
	if _, ok := reqs[0].Tool(chat.RememberTool); !ok {
		t.Errorf("the model was not offered %s: %v", chat.RememberTool, reqs[0].ToolNames())
	}
	if obs := toolMessages(reqs[1]); len(obs) != 1 || obs[0] != "Remembered." {
		t.Errorf("remember observation %q", obs)
	}
	facts, err := store.List(ctx, "alice")
	if err != nil || len(facts) != 1 {
		t.Fatalf("alice's facts = %+v, %v; want one", facts, err)
	}
	if f := facts[0]; f.Text != fact || f.Source != chat.RememberTool || f.ConversationID != convA || f.Identity != "alice" {
		t.Errorf("fact = %+v", f)
	}

	// Her next conversation: the fact is in the model's context.
	srv.Enqueue(llmtest.Answer("Teal it is."))
	const question = "Which colour should my new logo use? Pick my favourite colour"
	askAs(t, m, "alice", question)
	if mem := memoryMessage(srv.Requests()[2]); !strings.Contains(mem, fact) {
		t.Errorf("alice's second conversation does not recall the fact; memory message %q", mem)
	}

	// Bob's conversation, the same question: nothing of alice's.
	srv.Enqueue(llmtest.Answer("Which colour do you like?"))
	askAs(t, m, "bob", question)
	r := srv.Requests()[3]
	for _, msg := range r.Body.Messages {
		if strings.Contains(msg.Content, "teal") {
			t.Errorf("bob's conversation sees alice's fact in a %s message: %q", msg.Role, msg.Content)
		}
	}

	// Removed: alice's later conversations no longer see it.
	if err := store.Remove(ctx, "alice", facts[0].ID); err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(llmtest.Answer("Which colour do you like?"))
	askAs(t, m, "alice", question)
	if mem := memoryMessage(srv.Requests()[4]); mem != "" {
		t.Errorf("a removed fact is still recalled: %q", mem)
	}
	if err := store.Remove(ctx, "alice", facts[0].ID); err == nil || !strings.Contains(err.Error(), facts[0].ID) {
		t.Errorf("removing it again: %v, want an error naming the fact", err)
	}
}

// TestRememberNeedsAnOwner: a conversation started on the plain subject
// has no identity to remember for, so the model is not offered the tool;
// a fact too long is refused with an observation that says why.
func TestRememberNeedsAnOwner(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	srv := llmtest.New(t)
	store := memory.New(m.Srv.JetStream(t), m.Srv.Names())
	chatReplica(t, m, nil, nil, chat.WithLLM(newLLM(t, srv)), chat.WithMemory(store))

	srv.Enqueue(llmtest.Answer("Hello."))
	askAs(t, m, "", "hello")
	if _, ok := srv.Requests()[0].Tool(chat.RememberTool); ok {
		t.Errorf("a conversation with no owner was offered %s", chat.RememberTool)
	}

	long := strings.Repeat("teal ", memory.MaxFactRunes)
	srv.Enqueue(llmtest.Calls(llmtest.Call(chat.RememberTool, map[string]any{"fact": long})), llmtest.Answer("I could not."))
	_, resp := askAs(t, m, "carol", "remember this")
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Success || resp.ToolCalls[0].Code != schemas.CodeInvalidParams {
		t.Fatalf("tool calls = %+v, want one refused with %s", resp.ToolCalls, schemas.CodeInvalidParams)
	}
	if obs := toolMessages(srv.Requests()[2]); len(obs) != 1 || !strings.Contains(obs[0], fmt.Sprint(memory.MaxFactRunes)) {
		t.Errorf("observation %q does not say the limit", obs)
	}
	if facts, err := store.List(context.Background(), "carol"); err != nil || len(facts) != 0 {
		t.Errorf("carol's facts = %+v, %v; want none", facts, err)
	}
}

// TestRememberSlots: a slot the operator names is remembered as a fact of
// the client when the turn completes, replaced by its newer value, and
// recalled in the client's next conversation.
func TestRememberSlots(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	ctx := context.Background()
	srv := llmtest.New(t)
	store := memory.New(m.Srv.JetStream(t), m.Srv.Names())
	m.Agent(t, schemas.AgentContract{Name: "Profile", Capability: "text", Description: "Writes the user's shipping city.",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return fixture.OK("Profile", "wrote the city", map[string]schemas.TypedValue{"text": schemas.TextValue("shipping city "+ec.Param("city"), "Profile")}), nil
		}, 2)
	chatReplica(t, m, nil, []string{"Profile"}, chat.WithLLM(newLLM(t, srv)), chat.WithMemory(store, route.SlotText))

	for _, city := range []string{"Lisbon", "Porto"} {
		srv.Enqueue(llmtest.Calls(llmtest.Call("Profile", map[string]any{"city": city})), llmtest.Answer("Done."))
		if _, resp := askAs(t, m, "dana", "set my shipping city"); resp.State != schemas.ChatCompleted {
			t.Fatalf("turn = %+v", resp)
		}
	}
	facts, err := store.List(ctx, "dana")
	if err != nil || len(facts) != 1 {
		t.Fatalf("dana's facts = %+v, %v; want the slot's one", facts, err)
	}
	if want := route.SlotText + ": shipping city Porto"; facts[0].Text != want || facts[0].Source != "slot:"+route.SlotText {
		t.Errorf("fact = %+v, want %q from the slot", facts[0], want)
	}
	srv.Enqueue(llmtest.Answer("To Porto."))
	askAs(t, m, "dana", "Where do you ship my order? which city")
	reqs := srv.Requests()
	if mem := memoryMessage(reqs[len(reqs)-1]); !strings.Contains(mem, "shipping city Porto") {
		t.Errorf("the slot's fact is not recalled: %q", mem)
	}
}

// embedderOf is c's embeddings endpoint as the memory's Embedder.
type embedderOf struct{ c *llm.Client }

func (e embedderOf) Embed(ctx context.Context, texts []string) ([][]float32, schemas.Usage, error) {
	v, u, err := e.c.Embed(ctx, texts)
	return v, u.Report(), err
}

// TestMemoryRecallsByMeaning: with an embedding model (the scripted
// server's /v1/embeddings), a turn recalls a fact of its owner that shares
// no word with its message but is close to it in meaning; the same turn
// without a model recalls nothing.
func TestMemoryRecallsByMeaning(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	srv := llmtest.New(t)
	model := newLLM(t, srv)
	store := memory.New(m.Srv.JetStream(t), m.Srv.Names(), memory.WithEmbedder(embedderOf{model}, srv.Config().Model))
	const fact = "Dana is vegetarian"
	if _, err := store.Remember(context.Background(), memory.Fact{Identity: "dana", Text: fact, Source: chat.RememberTool}); err != nil {
		t.Fatal(err)
	}
	chatReplica(t, m, nil, nil, chat.WithLLM(model), chat.WithMemory(store))
	srv.Enqueue(llmtest.Answer("A lentil soup."))
	askAs(t, m, "dana", "suggest a vegetable soup for dinner")
	if mem := memoryMessage(srv.Requests()[0]); !strings.Contains(mem, fact) {
		t.Errorf("the turn does not recall %q with an embedding model; memory message %q", fact, mem)
	}
	if n := srv.EmbeddedTexts(); n < 2 {
		t.Errorf("the scripted model embedded %d texts, want the fact and the message", n)
	}

	lexical := memory.New(m.Srv.JetStream(t), m.Srv.Names())
	if got, err := lexical.Recall(context.Background(), "dana", "suggest a vegetable soup for dinner", 5, 1000); err != nil || len(got) != 0 {
		t.Errorf("lexical recall = %+v, %v; want nothing", got, err)
	}
}
