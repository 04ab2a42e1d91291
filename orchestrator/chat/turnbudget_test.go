package chat_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/prompt"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// The tool calls of one turn that run at the same time share what is left
// of the turn's budget: the turn's model asks three PromptAgents at once,
// each with a model of its own asking about 1800 tokens. Under a turn
// budget of 5000 (120 spent by the turn's first call) each would fit
// alone, not all three: two agents' calls are made, the third is refused
// (budget_exceeded), the turn ends failed with that code naming the
// limit, the spend and what was asked, its next model call is not made,
// and the turn's ledger in the mesh holds what was spent, within the
// budget. Before the turn's ledger was shared each task had all that was
// left, and all three calls were made (5640 tokens of 5000).
func TestTurnBudgetIsSharedByToolCallsRunAtOnce(t *testing.T) {
	m := meshtest.New(t)
	js := m.Srv.JetStream(t)
	names := []string{"Drafter1", "Drafter2", "Drafter3"}
	var servers []*llmtest.Server
	for _, name := range names {
		srv := llmtest.New(t)
		srv.Handle(func(llmtest.Request) llmtest.Reply {
			return llmtest.Reply{Content: "a draft", Usage: schemas.Tokens{Prompt: 1800, Completion: 40}}
		})
		servers = append(servers, srv)
		model, err := llm.New(srv.Config())
		if err != nil {
			t.Fatal(err)
		}
		a, err := prompt.New(prompt.Config{
			Name: name, Description: "drafts from a long brief", Capability: string(schemas.CapGeneration),
			SystemPrompt: strings.Repeat("word ", 1440), // about 1800 tokens a call
			Outputs:      []prompt.Output{{Name: "text", DataType: string(schemas.TypeText)}},
		}, model.WithShared(js, m.Res.LLM))
		if err != nil {
			t.Fatal(err)
		}
		m.Run(t, a)
	}
	var calls []llmtest.ToolCall
	for _, name := range names {
		calls = append(calls, llmtest.Call(name, nil))
	}
	srv := llmtest.New(t,
		llmtest.Reply{ToolCalls: calls, Usage: schemas.Tokens{Prompt: 100, Completion: 20}},
		llmtest.Answer("never sent"),
	)
	model, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	model = model.WithShared(js, m.Res.LLM)
	chatReplica(t, m, nil, names, chat.WithLLM(model), chat.WithTurnBudget(5000, 0))

	conv, resp, _ := ask(t, m, "", "draft three openings")
	made := 0
	for _, s := range servers {
		made += len(s.Requests())
	}
	if made != 2 {
		t.Errorf("the agents' models got %d calls; want 2, the third crossing the turn's budget", made)
	}
	if resp.State != schemas.ChatFailed || resp.Code != schemas.CodeBudgetExceeded {
		t.Fatalf("response %s %q: %s; want failed with %s", resp.State, resp.Code, resp.Error, schemas.CodeBudgetExceeded)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the turn's model got %d calls; want 1, the turn ending at the refusal", n)
	}
	for _, want := range []string{"budget_exceeded", "the chat turn of", "is 5000 tokens", "it has spent", "the next model call asks about", "was not made"} {
		if !strings.Contains(resp.Error, want) {
			t.Errorf("error %q does not say %q", resp.Error, want)
		}
	}
	var ok, refused int
	for _, rec := range resp.ToolCalls {
		switch {
		case rec.Success:
			ok++
		case rec.Code == schemas.CodeBudgetExceeded:
			refused++
		default:
			t.Errorf("tool call %+v", rec)
		}
	}
	if ok != 2 || refused != 1 {
		t.Errorf("%d tool calls done and %d refused; want 2 and 1", ok, refused)
	}
	spent, err := model.Spent(context.Background(), schemas.TurnBudgetKey(conv, 1))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(120 + 2*1840); spent.Tokens != want || spent.Tokens > 5000 {
		t.Errorf("the turn's ledger holds %s; want %d tokens, within the budget of 5000 (the turn's call and two agents', counted once)", spent, want)
	}
	if got := resp.Tokens.Prompt + resp.Tokens.Completion; got != 120+2*1840 {
		t.Errorf("the turn reports %d tokens; want %d", got, 120+2*1840)
	}
}
