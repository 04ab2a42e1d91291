package chat_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// Two orchestrator replicas (their chat turns) and three instances of an
// agent (its pipeline tasks), each process with its own connection and
// client, share one rate limit of 3 requests a window declared in the
// mesh: the provider, which allows 3 and answers 429 beyond, never sees
// more than 3 in a window, and every turn and run completes, its calls
// having waited their turn rather than failed.
func TestRateLimitSharedByReplicasAndAgentInstances(t *testing.T) {
	const (
		limit  = 3
		window = 300 * time.Millisecond
		turns  = 4
		runs   = 2 // of 3 parallel steps each
	)
	m := meshtest.New(t)
	prov := llmtest.NewWindowed(t, limit, window)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := llm.DeclareRateLimits(ctx, m.Res.LLM, llm.RateLimits{Window: llm.Duration(window),
		Models: map[string]llm.RateLimit{"test-model": {Requests: limit}}}); err != nil {
		t.Fatal(err)
	}
	process := func() *llm.Client { // one process's model: its own connection to the bucket
		js := m.Srv.JetStream(t)
		kv, err := js.KeyValue(ctx, m.Srv.Names().LLMBucket())
		if err != nil {
			t.Fatal(err)
		}
		cfg := prov.Config()
		cfg.MaxRetries = -1 // a 429 fails the call: only the shared limit keeps them away
		model, err := llm.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return model.WithShared(js, kv)
	}
	writer := schemas.AgentContract{Name: "Writer", Capability: schemas.CapGeneration, Description: "writes with its model",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}}
	for range 3 {
		model := process()
		m.Agent(t, writer, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			resp, _, err := model.Chat(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "write"}}})
			if err != nil {
				return schemas.AgentResult{}, err
			}
			return fixture.OK("Writer", "wrote", map[string]schemas.TypedValue{"text": schemas.TextValue(resp.Message.Content, "Writer")}), nil
		}, 2)
	}
	for range 2 {
		chatReplica(t, m, nil, []string{"Writer"}, chat.WithLLM(process()))
	}

	var followers []*chatEvents
	for i := range turns {
		conv := fmt.Sprintf("rate-%d", i)
		followers = append(followers, followChat(t, m, conv))
		if _, _, err := client.SendChat(ctx, m.Srv.JetStream(t), m.Srv.Names(), conv, "hello", "test"); err != nil {
			t.Fatal(err)
		}
	}
	spec := client.NewPipeline("writers").Step("a", "Writer").Step("b", "Writer").Step("c", "Writer").MustBuild()
	var ids []string
	for i := range runs {
		ids = append(ids, m.Submit(t, spec, fmt.Sprintf("writers-%d", i)))
	}
	for _, ce := range followers {
		if resp := ce.wait(t, 30*time.Second); resp.State != schemas.ChatCompleted {
			t.Fatalf("turn %s %q: %s; want completed after waiting its turn", resp.State, resp.Code, resp.Error)
		}
	}
	store := state.New(m.Res.Conversations, m.Res.Runs)
	for _, id := range ids {
		if run := meshtest.WaitRun(t, store, id, 30*time.Second); run.Status != schemas.RunCompleted {
			t.Fatalf("run %s %s %q: %s; want completed after waiting its turn", id, run.Status, run.Code, run.Error)
		}
	}
	received, refused, most := prov.Counts()
	if received != turns+3*runs || refused != 0 || most > limit {
		t.Fatalf("the provider saw %d requests (want %d), refused %d, at most %d in a window of %s (limit %d)",
			received, turns+3*runs, refused, most, window, limit)
	}
}
