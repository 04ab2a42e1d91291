package chat_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/internal/meshtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// A turn budget stops a turn mid-way: the first model call asks for an
// agent and uses 5100 tokens, the agent runs, and the second call, which
// would cross the turn's 3000, is not made. The turn ends failed with code
// budget_exceeded naming the limit and the spend, and the ledger in the
// mesh holds what the turn spent.
func TestTurnBudgetStopsTheTurnBeforeTheCallThatWouldCross(t *testing.T) {
	m := meshtest.New(t)
	m.Agent(t, schemas.AgentContract{Name: "Writer", Capability: schemas.CapGeneration, Description: "writes",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return meshtest.OK("Writer", "wrote", map[string]schemas.TypedValue{"text": schemas.TextValue("a poem", "Writer")}), nil
		}, 1)
	srv := llmtest.New(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{llmtest.Call("Writer", nil)}, Usage: schemas.Tokens{Prompt: 5000, Completion: 100}},
		llmtest.Answer("never sent"),
	)
	model, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	model = model.WithShared(m.Res.LLM)
	chatReplica(t, m, nil, []string{"Writer"}, chat.WithLLM(model), chat.WithTurnBudget(3000, 0))

	conv, resp, _ := ask(t, m, "", "write me a poem")
	if resp.State != schemas.ChatFailed || resp.Code != schemas.CodeBudgetExceeded {
		t.Fatalf("response %s %q: %s; want failed with %s", resp.State, resp.Code, resp.Error, schemas.CodeBudgetExceeded)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("the model got %d calls; the second would cross the budget and must not be made", n)
	}
	if len(resp.ToolCalls) != 1 || !resp.ToolCalls[0].Success {
		t.Fatalf("tool calls %+v: the turn should stop after the agent ran", resp.ToolCalls)
	}
	for _, want := range []string{"budget_exceeded", "turn 1 of conversation " + conv, "3000 tokens", "spent 5100 tokens"} {
		if !strings.Contains(resp.Error, want) {
			t.Errorf("error %q does not say %q", resp.Error, want)
		}
	}
	if resp.Tokens.Prompt != 5000 || resp.Tokens.Completion != 100 {
		t.Errorf("turn tokens %+v; want the one call's 5000+100", resp.Tokens)
	}
	spent, err := model.Spent(context.Background(), "budget.turn."+conv+".1")
	if err != nil || spent.Tokens != 5100 {
		t.Fatalf("ledger: %+v, %v; want 5100 tokens (the refused call's reservation given back)", spent, err)
	}
}
