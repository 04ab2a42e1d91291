package pipeline_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// A run's budget stops it between steps: the first step's agent reports
// 5000 tokens, past the run's 3000, so the step after it is never sent and
// the run fails with code budget_exceeded, naming the limit and the spend.
// With room in the budget the same pipeline runs to its end.
func TestRunBudgetStopsTheRunBetweenSteps(t *testing.T) {
	m := meshtest.New(t)
	var tasks atomic.Int32
	m.Agent(t, schemas.AgentContract{Name: "Costly", Capability: schemas.CapGeneration, Description: "spends 5000 tokens a task",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			tasks.Add(1)
			res := fixture.OK("Costly", "spent", map[string]schemas.TypedValue{"text": schemas.TextValue("x", "Costly")})
			res.Metrics = schemas.Metrics{Tokens: schemas.Tokens{Prompt: 4000, Completion: 1000}, Cost: 0.02}
			return res, nil
		}, 2)
	m.Orchestrator(t, []string{"Costly"})
	store := state.New(m.Res.Conversations, m.Res.Runs)

	spec := client.NewPipeline("spender").Step("one", "Costly").Then("two", "Costly").MustBuild()
	spec.Budget = &schemas.Budget{Tokens: 3000}
	run := meshtest.WaitRun(t, store, m.Submit(t, spec, "over-budget"), 20*time.Second)
	if run.Status != schemas.RunFailed || run.Code != schemas.CodeBudgetExceeded {
		t.Fatalf("run %s %q: %s; want failed with %s", run.Status, run.Code, run.Error, schemas.CodeBudgetExceeded)
	}
	for _, want := range []string{"budget of 3000 tokens", "used 5000 tokens and $0.020000"} {
		if !strings.Contains(run.Error, want) {
			t.Errorf("error %q does not say %q", run.Error, want)
		}
	}
	if n := tasks.Load(); n != 1 {
		t.Fatalf("the agent got %d tasks; the step after the budget was spent must not be sent", n)
	}
	if st, ok := run.Steps["two"]; ok && st.Status != schemas.StepPending {
		t.Fatalf("step two is %s; it must never start", st.Status)
	}

	spec.Budget = &schemas.Budget{Tokens: 20000}
	run = meshtest.WaitRun(t, store, m.Submit(t, spec, "within-budget"), 20*time.Second)
	if run.Status != schemas.RunCompleted || tasks.Load() != 3 {
		t.Fatalf("run within its budget: %s %q %s after %d tasks; want completed after 3", run.Status, run.Code, run.Error, tasks.Load())
	}
}

// A budget with a negative limit is refused when the spec is validated.
func TestRunBudgetIsValidated(t *testing.T) {
	spec := client.NewPipeline("bad").Step("one", "Costly").MustBuild()
	spec.Budget = &schemas.Budget{Tokens: -1, USD: -0.5}
	err := spec.Validate()
	if err == nil || !strings.Contains(err.Error(), "budget.tokens -1") || !strings.Contains(err.Error(), "budget.usd -0.5") {
		t.Fatalf("Validate = %v; want both negative limits named", err)
	}
	b := []byte(`{"steps":[{"id":"one","agent":"Costly"}],"budget":{"tokens":-1}}`)
	if err := schemas.ValidateJSON(schemas.SchemaPipeline, b); err == nil {
		t.Fatal("pipeline.schema.json accepts a negative budget")
	}
}

// A task carries what is left of its run's budget, and the agent runtime
// holds the agent's model calls to it: the agent's first call uses the
// run's 3000 tokens, its second is not made, and the step fails with code
// budget_exceeded.
func TestTaskBudgetStopsTheAgentsModelCalls(t *testing.T) {
	m := meshtest.New(t)
	srv := llmtest.New(t,
		llmtest.Reply{Content: "a draft", Usage: schemas.Tokens{Prompt: 2500, Completion: 500}},
		llmtest.Answer("never sent"),
	)
	model, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	var left atomic.Value
	m.Agent(t, schemas.AgentContract{Name: "Drafter", Capability: schemas.CapGeneration, Description: "asks its model twice",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			_, b, _ := schemas.TaskBudgetOf(ctx)
			left.Store(b)
			msgs := []llm.Message{{Role: llm.RoleUser, Content: "draft"}}
			if _, _, err := model.Chat(ctx, llm.Request{Messages: msgs}); err != nil {
				return schemas.AgentResult{}, err
			}
			if _, _, err := model.Chat(ctx, llm.Request{Messages: msgs}); err != nil {
				return schemas.AgentResult{}, err
			}
			return fixture.OK("Drafter", "drafted", map[string]schemas.TypedValue{"text": schemas.TextValue("x", "Drafter")}), nil
		}, 1)
	m.Orchestrator(t, []string{"Drafter"})
	store := state.New(m.Res.Conversations, m.Res.Runs)

	spec := client.NewPipeline("drafts").Step("one", "Drafter").MustBuild()
	spec.Budget = &schemas.Budget{Tokens: 3000}
	run := meshtest.WaitRun(t, store, m.Submit(t, spec, "task-budget"), 20*time.Second)
	if b, _ := left.Load().(schemas.Budget); b.Tokens != 3000 {
		t.Fatalf("the task carried budget %+v; want the run's 3000 tokens", b)
	}
	st := run.Steps["one"]
	if run.Status != schemas.RunFailed || st == nil || st.Code != schemas.CodeBudgetExceeded {
		t.Fatalf("run %s %q, step %+v; want the step failed with %s", run.Status, run.Code, st, schemas.CodeBudgetExceeded)
	}
	if !strings.Contains(st.Error, "spent 3000 tokens") {
		t.Errorf("step error %q does not report the spend", st.Error)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("the model got %d calls; the second would cross the task's budget", n)
	}
}
