package chat_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// A turn's totals are the sum of the orchestrator's own model calls (tokens
// counted by the model server, priced by the shared table) and what every
// agent it called reported.
func TestChatTurnTotalsIncludeAgents(t *testing.T) {
	m := meshtest.New(t)
	agentUsage := schemas.Metrics{Tokens: schemas.Tokens{Prompt: 1000, Completion: 500}, Cost: 0.05, ModelMS: 40}
	m.Agent(t, schemas.AgentContract{Name: "Writer", Capability: schemas.CapGeneration, Description: "writes, with a model of its own",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			time.Sleep(5 * time.Millisecond) // the agent's work, not a wait
			res := fixture.OK("Writer", "wrote", map[string]schemas.TypedValue{"text": schemas.TextValue("a poem", "Writer")})
			res.Metrics = agentUsage
			return res, nil
		}, 2)
	srv := llmtest.New(t,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{llmtest.Call("Writer", nil)}, Usage: schemas.Tokens{Prompt: 100, Completion: 20}},
		llmtest.Reply{Content: "Here is a poem.", Usage: schemas.Tokens{Prompt: 150, Completion: 30}},
	)
	cfg := srv.Config()
	cfg.Prices = map[string]llm.Price{cfg.Model: {Prompt: 1, Completion: 2}} // USD per million tokens
	model, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	chatReplica(t, m, nil, []string{"Writer"}, chat.WithLLM(model))

	_, resp, _ := ask(t, m, "", "write me a poem")
	if resp.State != schemas.ChatCompleted || len(resp.ToolCalls) != 1 {
		t.Fatalf("response %+v", resp)
	}
	call := resp.ToolCalls[0]
	if call.Tokens != agentUsage.Tokens || call.Cost != agentUsage.Cost || call.ModelMS != agentUsage.ModelMS || call.ToolMS < 5 {
		t.Fatalf("tool call usage %+v; want the agent's %+v and its duration as tool time", call.Usage, agentUsage)
	}
	wantTokens := schemas.Tokens{Prompt: 100 + 150 + 1000, Completion: 20 + 30 + 500}
	wantCost := (100*1+20*2)/1e6 + (150*1+30*2)/1e6 + agentUsage.Cost
	if resp.Tokens != wantTokens || math.Abs(resp.Cost-wantCost) > 1e-12 {
		t.Fatalf("turn totals %+v, $%v; want %+v, $%v", resp.Tokens, resp.Cost, wantTokens, wantCost)
	}
	if resp.ToolMS != call.ToolMS || resp.ModelMS < agentUsage.ModelMS {
		t.Fatalf("turn times: model %dms (want at least the agent's %dms), tools %dms (want the call's %dms)", resp.ModelMS, agentUsage.ModelMS, resp.ToolMS, call.ToolMS)
	}
	b, _ := json.Marshal(resp)
	if err := schemas.ValidateJSON(schemas.SchemaChatResponse, b); err != nil {
		t.Fatalf("the response fails chat-response.schema.json: %v\n%s", err, b)
	}
}
