package security_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/prompt"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// A PromptAgent on a secure mesh keeps its task's budget and the mesh's
// shared rate limit in the LLM bucket, as its own agent identity: two
// instances, each with its own connection and client, serve three tasks.
// The first task's budget (3000 tokens) is spent by its first model call,
// so the validated retry is not sent and the task fails budget_exceeded
// (not tried again);
// the rate limit (2 requests an hour, declared by admin) lets the second
// task's call through and refuses the third's at once (a retryable
// failure; the instances deliver a task once). The model server
// sees two requests, and no instance meets a permissions violation.
func TestPromptAgentKeepsBudgetAndRateLimitOnSecureMesh(t *testing.T) {
	m := startSecure(t)
	srv := llmtest.New(t,
		llmtest.Reply{Content: "not JSON", Usage: schemas.Tokens{Prompt: 2500, Completion: 500}},
		llmtest.Reply{Content: `{"title": "t", "body": "b"}`, Usage: schemas.Tokens{Prompt: 100, Completion: 20}},
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	limits := llm.RateLimits{Window: llm.Duration(time.Hour), Models: map[string]llm.RateLimit{"test-model": {Requests: 2}}}
	if err := llm.DeclareRateLimits(ctx, m.res.LLM, limits); err != nil {
		t.Fatal(err)
	}
	cfg := prompt.Config{
		Name: "Writer", Description: "writes a title and a body", Capability: string(schemas.CapGeneration),
		SystemPrompt: "Write.",
		Inputs:       []prompt.Input{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs:      []prompt.Output{{Name: "title", DataType: schemas.TypeText}, {Name: "body", DataType: schemas.TypeText}},
	}
	var instances []*conn
	for range 2 {
		c := m.connect(t, bus.Identity{Role: bus.RoleAgent, Name: cfg.Name})
		kv, err := c.js.KeyValue(ctx, m.names.LLMBucket())
		if err != nil {
			t.Fatal(err)
		}
		model, err := llm.New(srv.Config())
		if err != nil {
			t.Fatal(err)
		}
		a, err := prompt.New(cfg, model.WithShared(c.js, kv))
		if err != nil {
			t.Fatal(err)
		}
		meshtest.Serve(t, c.Conn, a, agents.WithHeartbeat(time.Second), agents.WithMaxDeliver(1))
		instances = append(instances, c)
	}
	al := m.connect(t, alice)
	task := func(budget *schemas.Budget) schemas.TaskRequest {
		return schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("nats", "test")}, Budget: budget, TimeoutMS: 5000}
	}

	res := directCall(t, m, al, alice, cfg.Name, task(&schemas.Budget{Tokens: 3000}))
	if e := res.Result.Error; res.Result.Success || e == nil || e.Code != schemas.CodeBudgetExceeded || !strings.Contains(e.Message, "spent 3000 tokens") {
		t.Fatalf("task with a budget of 3000 tokens: %+v %+v; want failed %s, having spent 3000 tokens", res.Result, e, schemas.CodeBudgetExceeded)
	}
	ledger, err := m.res.LLM.Get(ctx, "budget.task."+res.Event.Ext(bus.ExtTaskID))
	if err != nil {
		t.Fatalf("the task's ledger in %s: %v", m.names.LLMBucket(), err)
	}
	var spent llm.Spend
	if err := json.Unmarshal(ledger.Value(), &spent); err != nil || spent.Tokens != 3000 {
		t.Fatalf("the task's ledger holds %s (%v); want 3000 tokens", ledger.Value(), err)
	}

	if res = directCall(t, m, al, alice, cfg.Name, task(nil)); !res.Result.Success {
		t.Fatalf("second task, within the rate limit: %+v %+v", res.Result, res.Result.Error)
	}
	res = directCall(t, m, al, alice, cfg.Name, task(nil))
	if e := res.Result.Error; res.Result.Success || e == nil || e.Code != schemas.CodeExhausted || !strings.Contains(e.Message, "limit of model test-model (2 requests a window)") {
		t.Fatalf("third task, past the rate limit of 2 requests an hour: %+v %+v; want failed %s (its one delivery) naming the limit", res.Result, e, schemas.CodeExhausted)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("the model server got %d requests; want 2 (the budget refused one, the rate limit another)", n)
	}
	for i, c := range instances {
		select {
		case err := <-c.errs:
			if errors.Is(err, nats.ErrPermissionViolation) {
				t.Errorf("instance %d: %v", i, err)
			}
		default:
		}
	}
	if _, err := m.res.LLM.Get(ctx, "rate.model.openai.test-model"); errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatal("no instance wrote the rate limit's slots")
	}
}

// An agent on a secure mesh keeps the ledger of the chat turn its task
// names (budget_key budget.turn.<conversation>.<n>, where the turn's tool
// calls run at the same time share the turn's budget): its model call
// reserves and settles there, with no permissions violation, and a call
// that would cross the turn's budget is refused budget_exceeded.
func TestPromptAgentKeepsATurnsLedgerOnSecureMesh(t *testing.T) {
	m := startSecure(t)
	srv := llmtest.New(t, llmtest.Reply{Content: "a draft", Usage: schemas.Tokens{Prompt: 400, Completion: 20}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := prompt.Config{
		Name: "Drafter", Description: "drafts", Capability: string(schemas.CapGeneration), SystemPrompt: "Draft.",
		Outputs: []prompt.Output{{Name: "text", DataType: schemas.TypeText}},
	}
	c := m.connect(t, bus.Identity{Role: bus.RoleAgent, Name: cfg.Name})
	kv, err := c.js.KeyValue(ctx, m.names.LLMBucket())
	if err != nil {
		t.Fatal(err)
	}
	model, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	a, err := prompt.New(cfg, model.WithShared(c.js, kv))
	if err != nil {
		t.Fatal(err)
	}
	meshtest.Serve(t, c.Conn, a, agents.WithHeartbeat(time.Second), agents.WithMaxDeliver(1))
	al := m.connect(t, alice)
	key := schemas.TurnBudgetKey("c-secure", 1)
	task := schemas.TaskRequest{Instruction: "draft", Budget: &schemas.Budget{Tokens: 1000}, BudgetKey: key, TimeoutMS: 5000}

	if res := directCall(t, m, al, alice, cfg.Name, task); !res.Result.Success {
		t.Fatalf("first task, within the turn's budget: %+v %+v", res.Result, res.Result.Error)
	}
	ledger, err := m.res.LLM.Get(ctx, key)
	if err != nil {
		t.Fatalf("the turn's ledger in %s: %v", m.names.LLMBucket(), err)
	}
	var spent llm.Spend
	if err := json.Unmarshal(ledger.Value(), &spent); err != nil || spent.Tokens != 420 {
		t.Fatalf("the turn's ledger holds %s (%v); want the call's 420 tokens", ledger.Value(), err)
	}
	if _, err := m.res.LLM.Put(ctx, key, []byte(`{"tokens": 999, "usd": 0}`)); err != nil {
		t.Fatal(err)
	}
	res := directCall(t, m, al, alice, cfg.Name, task)
	if e := res.Result.Error; res.Result.Success || e == nil || e.Code != schemas.CodeBudgetExceeded || !strings.Contains(e.Message, "the chat turn of") {
		t.Fatalf("second task, the turn's ledger at 999 of 1000 tokens: %+v %+v; want failed %s naming the turn's budget", res.Result, e, schemas.CodeBudgetExceeded)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("the model server got %d requests; want 1", n)
	}
	select {
	case err := <-c.errs:
		if errors.Is(err, nats.ErrPermissionViolation) {
			t.Errorf("the agent: %v", err)
		}
	default:
	}
}
