package chat_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
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
			return fixture.OK("Writer", "wrote", map[string]schemas.TypedValue{"text": schemas.TextValue("a poem", "Writer")}), nil
		}, 1)
	srv := llmtest.New(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{llmtest.Call("Writer", nil)}, Usage: schemas.Tokens{Prompt: 5000, Completion: 100}},
		llmtest.Answer("never sent"),
	)
	model, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	model = model.WithShared(m.Srv.JetStream(t), m.Res.LLM)
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
	if resp.Tokens.Prompt != 5000 || resp.Tokens.Completion != 100 || resp.Budget == nil || resp.Budget.Tokens != 3000 {
		t.Errorf("turn tokens %+v of budget %+v; want the one call's 5000+100 of 3000", resp.Tokens, resp.Budget)
	}
	b, _ := json.Marshal(resp)
	if err := schemas.ValidateJSON(schemas.SchemaChatResponse, b); err != nil {
		t.Fatalf("the response fails chat-response.schema.json: %v\n%s", err, b)
	}
	spent, err := model.Spent(context.Background(), "budget.turn."+conv+".1")
	if err != nil || spent.Tokens != 5100 {
		t.Fatalf("ledger: %+v, %v; want 5100 tokens (the refused call's reservation given back)", spent, err)
	}
}

// A client's budget spans its turns and every replica: the first turn
// spends 5100 tokens of the client's 3000 a day, and the next turn's first
// model call, on another replica, is not made.
func TestClientBudgetSpansTurnsAndReplicas(t *testing.T) {
	m := meshtest.New(t)
	srv := llmtest.New(t,
		llmtest.Reply{Content: "a poem", Usage: schemas.Tokens{Prompt: 5000, Completion: 100}},
		llmtest.Answer("never sent"),
	)
	for turn := 1; turn <= 2; turn++ {
		model, err := llm.New(srv.Config())
		if err != nil {
			t.Fatal(err)
		}
		js := m.Srv.JetStream(t)
		kv, err := js.KeyValue(context.Background(), m.Srv.Names().LLMBucket())
		if err != nil {
			t.Fatal(err)
		}
		stop := chatReplica(t, m, nil, nil, chat.WithLLM(model.WithShared(js, kv)), chat.WithClientBudget(3000, 0, 24*time.Hour))
		_, resp, _ := ask(t, m, "", "write me a poem")
		if turn == 1 {
			if resp.State != schemas.ChatCompleted {
				t.Fatalf("first turn %s %q: %s; want completed within the budget", resp.State, resp.Code, resp.Error)
			}
			stop() // the next turn goes to another replica
			continue
		}
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("the model got %d calls; the second turn's must not be made, the client's budget being spent", n)
		}
		if resp.Code != schemas.CodeBudgetExceeded || !strings.Contains(resp.Error, "client anonymous") || !strings.Contains(resp.Error, "spent 5100 tokens") {
			t.Fatalf("second turn %s %q: %s; want budget_exceeded naming the client and its spend", resp.State, resp.Code, resp.Error)
		}
	}
}

// What the agents of a turn report counts in the turn's budget: the task
// carries the turn's budget and its ledger's key (where an agent's own
// model calls would reserve), and the agent's 5000 tokens, reported
// without a model call of the mesh's, past the turn's 3000, are charged
// to the ledger and stop the turn before its next model call.
func TestTurnBudgetCountsTheAgentsItCalls(t *testing.T) {
	m := meshtest.New(t)
	carried := make(chan *schemas.Budget, 1)
	keys := make(chan string, 1)
	m.Agent(t, schemas.AgentContract{Name: "Writer", Capability: schemas.CapGeneration, Description: "writes, with a model of its own",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			_, b, ok := schemas.TaskBudgetOf(ctx)
			keys <- schemas.TaskBudgetKeyOf(ctx)
			if ok {
				carried <- &b
			} else {
				carried <- nil
			}
			res := fixture.OK("Writer", "wrote", map[string]schemas.TypedValue{"text": schemas.TextValue("a poem", "Writer")})
			res.Metrics = schemas.Metrics{Tokens: schemas.Tokens{Prompt: 4000, Completion: 1000}}
			return res, nil
		}, 1)
	srv := llmtest.New(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{llmtest.Call("Writer", nil)}, Usage: schemas.Tokens{Prompt: 100, Completion: 20}},
		llmtest.Answer("never sent"),
	)
	model, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	chatReplica(t, m, nil, []string{"Writer"}, chat.WithLLM(model.WithShared(m.Srv.JetStream(t), m.Res.LLM)), chat.WithTurnBudget(3000, 0))

	conv, resp, _ := ask(t, m, "", "write me a poem")
	if b, key := <-carried, <-keys; b == nil || b.Tokens != 3000 || key != schemas.TurnBudgetKey(conv, 1) {
		t.Fatalf("the task carried budget %+v in ledger %q; want the turn's, 3000 tokens, in %s", b, key, schemas.TurnBudgetKey(conv, 1))
	}
	if resp.Code != schemas.CodeBudgetExceeded || len(srv.Requests()) != 1 || !strings.Contains(resp.Error, "spent 5120 tokens") {
		t.Fatalf("response %s %q: %s after %d model calls; want budget_exceeded after 1, with the agent's 5000 tokens counted", resp.State, resp.Code, resp.Error, len(srv.Requests()))
	}
}
