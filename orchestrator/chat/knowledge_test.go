package chat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/knowledge"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestChatAnswersFromKnowledgeBase is the refund-policy flow: the model
// calls KnowledgeAgent on the "policies" knowledge base, the passages it
// returns reach the model (the ¶state Data shows the passages of
// current_chunks, CHUNKS' facts), and the model answers
// from them (the scripted model quotes the passage it was shown, so the
// answer holds the policy's words only if the chunk reached it). The same
// scripted server embeds the chunks and the query (fused retrieval).
func TestChatAnswersFromKnowledgeBase(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	ctx := context.Background()
	store := resolvers.NewObjectStore(m.Res.Files)
	kb := knowledge.NewStore(m.Res.Files)
	if _, err := kb.Create(ctx, "policies", "shop policies"); err != nil {
		t.Fatal(err)
	}
	for _, d := range samples.Documents() {
		ref, err := store.Store(ctx, bytes.NewReader(d.Content), d.MediaType, d.Metadata())
		if err != nil {
			t.Fatal(err)
		}
		if d.Name == "refund-policy.md" || d.Name == "nats-notes.txt" {
			if _, err := kb.Add(ctx, "policies", ref.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv := llmtest.New(t)
	c := newLLM(t, srv)
	embed := knowledge.EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, schemas.Usage, error) {
		v, u, err := c.Embed(ctx, texts)
		return v, u.Report(), err
	})
	agent, err := knowledge.New(store, m.Res.Files, knowledge.WithEmbedder(embed, "llmtest"))
	if err != nil {
		t.Fatal(err)
	}
	m.Run(t, agent)

	window := regexp.MustCompile(`[^."]*within 30 days of delivery[^."]*\.`)
	srv.Enqueue(llmtest.Calls(llmtest.Call(knowledge.Name, map[string]any{
		"query": "refund policy: how long to return an item", "kb": "policies", "top_k": 3})))
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		if s := window.FindString(stateData(r)); s != "" {
			return llmtest.Answer("According to our refund policy: " + strings.TrimSpace(s))
		}
		return llmtest.Answer("I could not find it in the policies.")
	})
	chatReplica(t, m, nil, []string{knowledge.Name}, chat.WithLLM(c))

	_, resp, _ := ask(t, m, "", "What is our refund policy?")
	if resp.State != schemas.ChatCompleted || len(resp.ToolCalls) != 1 {
		t.Fatalf("response = %+v", resp)
	}
	if tc := resp.ToolCalls[0]; tc.Agent != knowledge.Name || !tc.Success {
		t.Errorf("tool call = %+v, want a successful %s", tc, knowledge.Name)
	}
	if want := "According to our refund policy: You can return most items within 30 days of delivery for a full refund."; resp.Output != want {
		t.Errorf("answer %q, want %q", resp.Output, want)
	}
	reqs := srv.Requests()
	tool, ok := reqs[0].Tool(knowledge.Name)
	if !ok {
		t.Fatalf("the model was not offered %s: %v", knowledge.Name, reqs[0].ToolNames())
	}
	params, _ := json.Marshal(tool.Parameters)
	for _, want := range []string{`"query"`, `"kb"`, `"top_k"`, `"filters"`} {
		if !bytes.Contains(params, []byte(want)) {
			t.Errorf("tool parameters lack %s: %s", want, params)
		}
	}
	if data := stateData(reqs[len(reqs)-1]); !strings.Contains(data, `"current_chunks"`) || !strings.Contains(data, "refund-policy.md #1") {
		t.Errorf("the state does not show the passages with their source: %s", data)
	}
	if obs := strings.Join(toolMessages(reqs[len(reqs)-1]), "\n"); !strings.Contains(obs, "3 chunks (CHUNKS) -> †state.current_chunks") {
		t.Errorf("observation %q", obs)
	}
	if srv.EmbeddedTexts() == 0 {
		t.Error("nothing was embedded: the search was not fused")
	}
}

// stateData is the ¶state Data message of a request ("" when it has none).
func stateData(r llmtest.Request) string {
	for _, m := range r.MessagesOf("system") {
		if strings.HasPrefix(m.Content, "## Data: ¶state") {
			return m.Content
		}
	}
	return ""
}
