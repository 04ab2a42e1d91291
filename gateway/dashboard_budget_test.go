package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/folder"
	"github.com/agentmesh/agentmesh/internal/browsertest"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// spendSpec is a run of two steps of Spender (5000 tokens each) under a
// budget of 3000 tokens: the second step never starts.
const spendSpec = `name: spend
budget: {tokens: 3000}
steps:
  - {id: one, agent: Spender}
  - {id: two, agent: Spender, depends_on: [one]}
`

// TestDashboardBudgetPanel drives the budget panel of a run's and a
// conversation's page in a real headless Chromium: a run whose budget its
// first step spent (spent / limit, the run's refusal), and a conversation
// under a turn budget of 5000 tokens whose first turn spent 2100 and whose
// second had its FolderAgent call refused by a policy, then its next model
// call refused by the budget.
func TestDashboardBudgetPanel(t *testing.T) {
	if _, err := browsertest.Find(); err != nil {
		t.Skipf("browser test skipped: %v", err)
	}
	srv := llmtest.New(t,
		llmtest.Reply{Content: "Hello.", Usage: schemas.Tokens{Prompt: 2000, Completion: 100}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{llmtest.Call(folder.Name, map[string]any{})}, Usage: schemas.Tokens{Prompt: 4000, Completion: 200}},
	)
	model, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	ps, err := llm.PolicyRules{RefuseTools: []string{folder.Name}}.Policies()
	if err != nil {
		t.Fatal(err)
	}
	m := newTestMeshChat(t, []chat.Option{chat.WithLLM(model), chat.WithTurnBudget(5000, 0), chat.WithGuard(llm.NewGuard(ps))})
	spender := agents.Func(schemas.AgentContract{Name: "Spender", Capability: schemas.CapGeneration, Description: "spends 5000 tokens a task",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.AgentResult{Success: true, Agent: "Spender", Summary: "spent",
				Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue("x", "Spender")},
				Metrics: schemas.Metrics{Tokens: schemas.Tokens{Prompt: 4000, Completion: 1000}}}, nil
		})
	meshtest.Serve(t, m.srv.Conn(t), spender, agents.WithHeartbeat(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.gw.def.reg.Wait(ctx, "Spender", 1); err != nil {
		t.Fatal(err)
	}
	m.runToEnd(t, "spend-1", spendSpec)
	events := m.openSSE(t, "/api/conversations/c-budget/events")
	for i, msg := range []string{"hello", "put the images in folders"} {
		body := `{"conversation_id":"c-budget","message":"` + msg + `"`
		if i == 0 {
			body += `,"new":true`
		}
		if r := m.postJSON(t, "/api/chat", body+"}"); r.status != 202 {
			t.Fatalf("chat %q: %d %s", msg, r.status, clip(r.body))
		}
		waitEvent(t, events, "io.agentmesh.chat.responded", nil)
	}

	d := &dashboard{m: m, tab: browsertest.Tab(t, 2*time.Minute), shots: browsertest.ArtifactDir(t)}
	d.open(t, "#/runs/spend-1")
	d.until(t, "the run's spend against its budget, over it", `(() => {
		const l = document.querySelector("#run-budget .budget-line[data-kind=tokens]");
		return !!l && l.dataset.spent === "5000" && l.dataset.limit === "3000" && l.classList.contains("over") &&
			l.innerText.includes("spent 5000 tokens of 3000 tokens");
	})()`)
	refusal := d.eval(t, `document.querySelector("#run-budget .refusal[data-code=budget_exceeded]")?.innerText || ""`)
	for _, want := range []string{"run", "budget_exceeded", "a budget stopped it", "3000 tokens"} {
		if !strings.Contains(refusal, want) {
			t.Errorf("the run's refusal %q does not say %q", refusal, want)
		}
	}
	browsertest.Screenshot(t, d.tab, d.shots, "budget-run.png")

	d.open(t, "#/conversations/c-budget")
	d.until(t, "each turn's spend against the turn budget", `(() => {
		const l = (n) => document.querySelector('#conversation-budget [data-turn="' + n + '"] .budget-line[data-kind=tokens]');
		return !!l(1) && !!l(2) && l(1).dataset.spent === "2100" && l(1).dataset.limit === "5000" && !l(1).classList.contains("over") &&
			l(1).innerText.includes("spent 2100 tokens of 5000 tokens") && l(2).dataset.spent === "4200";
	})()`)
	refusals := d.eval(t, `[...document.querySelectorAll("#conversation-budget .refusal")].map((r) => r.dataset.code + " | " + r.innerText).join("\n")`)
	for _, want := range []string{"policy_refused | turn 2, " + folder.Name, "a policy refused it", "may not be called", "budget_exceeded | turn 2", "is 5000 tokens"} {
		if !strings.Contains(refusals, want) {
			t.Errorf("the conversation's refusals\n%s\ndo not say %q", refusals, want)
		}
	}
	browsertest.Screenshot(t, d.tab, d.shots, "budget-conversation.png")
}
