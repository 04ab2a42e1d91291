package pipeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
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

// The model steps of one wave share what is left of the run's budget, in
// one ledger of the mesh's LLM bucket, whichever of two replicas starts
// them: three evaluators, each asking about 1800 tokens, under a budget of
// 5000. Each call reserves its prompt before it is sent, so two are made
// and the third, which would take the wave past the budget, is not: its
// step fails budget_exceeded naming the limit, the spend and what it asked,
// and the run ends with that code. The spend stays within the budget.
func TestWaveOfModelStepsSharesTheRunsBudget(t *testing.T) {
	eval := llmtest.Reply{Content: `{"score": 0.5, "reasoning": "long"}`, Usage: schemas.Tokens{Prompt: 1800, Completion: 40}}
	srv := llmtest.New(t, eval, eval, eval)
	m := meshtest.New(t)
	model, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	shared := model.WithShared(m.Srv.JetStream(t), m.Res.LLM)
	o := m.Orchestrator(t, nil, orchestrator.WithModel(shared))
	m.Orchestrator(t, nil, orchestrator.WithModel(shared))

	b := client.NewPipeline("judges").SeedValue("essay", schemas.TypeText, "", strings.Repeat("word ", 1400))
	for _, id := range []string{"j1", "j2", "j3"} {
		b = b.Evaluator(id, "seed.essay", "Is it long?")
	}
	spec := b.MustBuild()
	spec.Budget = &schemas.Budget{Tokens: 5000}
	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, "judges"), 20*time.Second)
	if r.Status != schemas.RunFailed || r.Code != schemas.CodeBudgetExceeded {
		t.Fatalf("run %s %q: %s; want failed with %s", r.Status, r.Code, r.Error, schemas.CodeBudgetExceeded)
	}
	var refused []string
	for _, id := range []string{"j1", "j2", "j3"} {
		st := r.Steps[id]
		switch {
		case st == nil:
			t.Fatalf("step %s has no record", id)
		case st.Status == schemas.StepFailed && st.Code == schemas.CodeBudgetExceeded:
			refused = append(refused, id)
			for _, want := range []string{"is 5000 tokens", "it has spent", "the next model call asks about", "was not made"} {
				if !strings.Contains(st.Error, want) || !strings.Contains(r.Error, want) {
					t.Errorf("step %s's error %q (run's %q) does not say %q", id, st.Error, r.Error, want)
				}
			}
		case st.Status != schemas.StepCompleted:
			t.Errorf("step %s %s %q: %s", id, st.Status, st.Code, st.Error)
		}
	}
	if len(refused) != 1 || len(srv.Requests()) != 2 {
		t.Fatalf("steps %v refused, %d calls made; want one refused and two made", refused, len(srv.Requests()))
	}
	var used int64
	for _, st := range r.Steps {
		used += int64(st.Metrics.Tokens.Prompt + st.Metrics.Tokens.Completion)
	}
	if used != 2*1840 || used > spec.Budget.Tokens {
		t.Fatalf("the run used %d tokens; want the two calls' 3680, within the budget of 5000", used)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := m.Res.LLM.Get(ctx, schemas.RunBudgetKey(r.ID, 0))
	if err != nil {
		t.Fatalf("the wave's ledger: %v", err)
	}
	var spent llm.Spend
	if err := json.Unmarshal(e.Value(), &spent); err != nil || spent.Tokens != used {
		t.Fatalf("the wave's ledger holds %s (%v); want the %d tokens the calls used (no reservation left behind)", e.Value(), err, used)
	}
}

// The agents' steps of one wave share what is left of the run's budget
// too: each task carries the wave's ledger (budget_key), where the
// agents' model calls reserve and settle together. Three steps each
// asking about 1800 tokens under a budget of 5000: two calls are made,
// the third step fails budget_exceeded, and so does the run.
func TestWaveOfAgentStepsSharesTheRunsBudget(t *testing.T) {
	srv := llmtest.New(t)
	srv.Handle(func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "a draft", Usage: schemas.Tokens{Prompt: 1800, Completion: 40}}
	})
	m := meshtest.New(t)
	model, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	model = model.WithShared(m.Srv.JetStream(t), m.Res.LLM)
	var keys sync.Map
	m.Agent(t, schemas.AgentContract{Name: "Drafter", Capability: schemas.CapGeneration, Description: "drafts from a long prompt",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			keys.Store(schemas.TaskBudgetKeyOf(ctx), true)
			msgs := []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("word ", 1400)}}
			if _, _, err := model.Chat(ctx, llm.Request{Messages: msgs}); err != nil {
				return schemas.AgentResult{}, err
			}
			return fixture.OK("Drafter", "drafted", map[string]schemas.TypedValue{"text": schemas.TextValue("x", "Drafter")}), nil
		}, 3)
	o := m.Orchestrator(t, []string{"Drafter"})

	spec := client.NewPipeline("drafts").Step("a", "Drafter").Step("b", "Drafter").Step("c", "Drafter").MustBuild()
	spec.Budget = &schemas.Budget{Tokens: 5000}
	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, "drafts"), 20*time.Second)
	if r.Status != schemas.RunFailed || r.Code != schemas.CodeBudgetExceeded {
		t.Fatalf("run %s %q: %s; want failed with %s", r.Status, r.Code, r.Error, schemas.CodeBudgetExceeded)
	}
	refused := 0
	for _, id := range []string{"a", "b", "c"} {
		if st := r.Steps[id]; st != nil && st.Code == schemas.CodeBudgetExceeded {
			refused++
		}
	}
	if n := len(srv.Requests()); refused != 1 || n != 2 {
		t.Fatalf("%d steps refused, %d calls made; want 1 and 2", refused, n)
	}
	if _, ok := keys.Load(schemas.RunBudgetKey(r.ID, 0)); !ok {
		t.Errorf("the tasks' ledgers: want %s", schemas.RunBudgetKey(r.ID, 0))
	}
}
