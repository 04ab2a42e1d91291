package metrics_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmesh/agentmesh/observe/metrics"
	"github.com/agentmesh/agentmesh/schemas"
)

func newObserver(t *testing.T) (*metrics.Observer, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	o, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return o, reg
}

// Each task of an agent is counted once by outcome, timed, and in flight
// between its receipt and its end; a redelivery and a dead letter are
// counted too, and the tokens and cost the agent reported are added up.
func TestObserverTasks(t *testing.T) {
	o, reg := newObserver(t)
	ctx := context.Background()
	ref := func(id string) schemas.TaskRef { return schemas.TaskRef{Agent: "TextAgent", TaskID: id} }
	o.Observe(ctx, schemas.TaskReceived{TaskRef: ref("a"), Delivery: 1})
	o.Observe(ctx, schemas.TaskReceived{TaskRef: ref("b"), Delivery: 1})
	o.Observe(ctx, schemas.TaskReceived{TaskRef: ref("c"), Delivery: 3})
	if got := single(t, reg, "agentmesh_tasks_in_flight").GetGauge().GetValue(); got != 3 {
		t.Errorf("in flight after 3 receipts = %v, want 3", got)
	}
	o.Observe(ctx, schemas.TaskStarted{TaskRef: ref("a"), Delivery: 1})
	o.Observe(ctx, schemas.TaskFinished{TaskRef: ref("a"), Outcome: schemas.OutcomeCompleted, Duration: 20 * time.Millisecond,
		Metrics: schemas.Metrics{Tokens: schemas.Tokens{Prompt: 7, Completion: 3}, Cost: 0.25}})
	o.Observe(ctx, schemas.TaskFinished{TaskRef: ref("b"), Outcome: schemas.OutcomeFailed, Code: schemas.CodeNotFound, Duration: time.Second})
	o.Observe(ctx, schemas.TaskFinished{TaskRef: ref("c"), Outcome: schemas.OutcomeDeadLetter, Duration: 2 * time.Second,
		Metrics: schemas.Metrics{Tokens: schemas.Tokens{Prompt: 1}, Cost: -1}})

	want := `
# HELP agentmesh_tasks_total Tasks that ended on this instance, by agent and outcome (completed, failed, retry, dead_letter, duplicate).
# TYPE agentmesh_tasks_total counter
agentmesh_tasks_total{agent="TextAgent",outcome="completed"} 1
agentmesh_tasks_total{agent="TextAgent",outcome="dead_letter"} 1
agentmesh_tasks_total{agent="TextAgent",outcome="failed"} 1
# HELP agentmesh_tasks_in_flight Tasks taken from the bus and not yet ended, by agent.
# TYPE agentmesh_tasks_in_flight gauge
agentmesh_tasks_in_flight{agent="TextAgent"} 0
# HELP agentmesh_task_redeliveries_total Tasks taken again after an earlier delivery (delivery count above 1), by agent.
# TYPE agentmesh_task_redeliveries_total counter
agentmesh_task_redeliveries_total{agent="TextAgent"} 1
# HELP agentmesh_dead_letters_total Tasks given up and dead-lettered, by agent.
# TYPE agentmesh_dead_letters_total counter
agentmesh_dead_letters_total{agent="TextAgent"} 1
# HELP agentmesh_task_tokens_total Tokens the agents reported in their results, by agent and kind (prompt, completion).
# TYPE agentmesh_task_tokens_total counter
agentmesh_task_tokens_total{agent="TextAgent",kind="completion"} 3
agentmesh_task_tokens_total{agent="TextAgent",kind="prompt"} 8
# HELP agentmesh_task_cost_usd_total Cost in US dollars the agents reported in their results, by agent.
# TYPE agentmesh_task_cost_usd_total counter
agentmesh_task_cost_usd_total{agent="TextAgent"} 0.25
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "agentmesh_tasks_total", "agentmesh_tasks_in_flight",
		"agentmesh_task_redeliveries_total", "agentmesh_dead_letters_total", "agentmesh_task_tokens_total", "agentmesh_task_cost_usd_total"); err != nil {
		t.Error(err)
	}
	h := histogram(t, reg, "agentmesh_task_duration_seconds")
	if h.GetSampleCount() != 3 || h.GetSampleSum() != 3.02 {
		t.Errorf("task duration: %d samples summing %v, want 3 summing 3.02", h.GetSampleCount(), h.GetSampleSum())
	}
}

// Pipeline steps count when they end (not when they start), runs when they
// end, chat turns and model calls with their tokens and cost by model.
func TestObserverOrchestrator(t *testing.T) {
	o, reg := newObserver(t)
	ctx := context.Background()
	o.Observe(ctx, schemas.RunChanged{RunID: "r", Status: schemas.RunRunning, Steps: 3})
	for _, s := range []schemas.StepChanged{
		{RunID: "r", StepID: "a", Agent: "A", Status: schemas.StepRunning},
		{RunID: "r", StepID: "a", Agent: "A", Status: schemas.StepCompleted},
		{RunID: "r", StepID: "b", Agent: "B", Status: schemas.StepRunning},
		{RunID: "r", StepID: "b", Agent: "B", Status: schemas.StepFailed},
		{RunID: "r", StepID: "c", Agent: "A", Status: schemas.StepSkipped},
	} {
		o.Observe(ctx, s)
	}
	o.Observe(ctx, schemas.RunChanged{RunID: "r", Status: schemas.RunFailed, Steps: 3})
	o.Observe(ctx, schemas.LLMCalled{Model: "m1", Tokens: schemas.Tokens{Prompt: 100, Completion: 20}, Cost: 0.5, Duration: time.Second})
	o.Observe(ctx, schemas.LLMCalled{Model: "m1", Tokens: schemas.Tokens{Prompt: 50, Completion: 5}, Cost: 0.25})
	o.Observe(ctx, schemas.LLMCalled{Err: errors.New("unreachable")})
	o.Observe(ctx, schemas.ChatTurnEnded{State: schemas.ChatCompleted, Duration: 3 * time.Second})
	o.Observe(ctx, schemas.ChatTurnEnded{State: schemas.ChatFailed, Duration: time.Second})

	want := `
# HELP agentmesh_pipeline_runs_total Pipeline runs that ended, by outcome (completed, failed).
# TYPE agentmesh_pipeline_runs_total counter
agentmesh_pipeline_runs_total{outcome="failed"} 1
# HELP agentmesh_pipeline_steps_total Pipeline steps that ended, by agent and outcome (completed, failed, skipped).
# TYPE agentmesh_pipeline_steps_total counter
agentmesh_pipeline_steps_total{agent="A",outcome="completed"} 1
agentmesh_pipeline_steps_total{agent="A",outcome="skipped"} 1
agentmesh_pipeline_steps_total{agent="B",outcome="failed"} 1
# HELP agentmesh_chat_turns_total Chat turns that ended, by outcome (completed, step_limit_reached, failed).
# TYPE agentmesh_chat_turns_total counter
agentmesh_chat_turns_total{outcome="completed"} 1
agentmesh_chat_turns_total{outcome="failed"} 1
# HELP agentmesh_llm_calls_total Model calls of chat turns, by model and outcome (ok, error).
# TYPE agentmesh_llm_calls_total counter
agentmesh_llm_calls_total{model="m1",outcome="ok"} 2
agentmesh_llm_calls_total{model="unknown",outcome="error"} 1
# HELP agentmesh_llm_tokens_total Tokens of the chat turns' model calls, by model and kind (prompt, completion).
# TYPE agentmesh_llm_tokens_total counter
agentmesh_llm_tokens_total{kind="completion",model="m1"} 25
agentmesh_llm_tokens_total{kind="prompt",model="m1"} 150
# HELP agentmesh_llm_cost_usd_total Cost in US dollars of the chat turns' model calls, by model (0 for a model with no price).
# TYPE agentmesh_llm_cost_usd_total counter
agentmesh_llm_cost_usd_total{model="m1"} 0.75
agentmesh_llm_cost_usd_total{model="unknown"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "agentmesh_pipeline_runs_total", "agentmesh_pipeline_steps_total",
		"agentmesh_chat_turns_total", "agentmesh_llm_calls_total", "agentmesh_llm_tokens_total", "agentmesh_llm_cost_usd_total"); err != nil {
		t.Error(err)
	}
	if h := histogram(t, reg, "agentmesh_chat_turn_duration_seconds"); h.GetSampleCount() != 2 || h.GetSampleSum() != 4 {
		t.Errorf("turn duration: %d samples summing %v, want 2 summing 4", h.GetSampleCount(), h.GetSampleSum())
	}
}

// One Observer per registry: a second one is refused with a reason.
func TestObserverTwiceOnOneRegistry(t *testing.T) {
	_, reg := newObserver(t)
	if _, err := metrics.New(reg); err == nil || !strings.Contains(err.Error(), "one metrics.Observer per registry") {
		t.Fatalf("second New on one registry: err = %v", err)
	}
}

// The observer sits beside others on the one seam.
func TestObserverCombines(t *testing.T) {
	o, reg := newObserver(t)
	var other int
	ob := schemas.Observers(o, schemas.ObserverFunc(func(context.Context, schemas.Observation) { other++ }))
	ob.Observe(context.Background(), schemas.ChatTurnEnded{State: schemas.ChatCompleted})
	if n := single(t, reg, "agentmesh_chat_turns_total").GetCounter().GetValue(); n != 1 || other != 1 {
		t.Errorf("turns = %v, other observer saw %d; want 1 and 1", n, other)
	}
}

// docs/observability.md describes every metric the package exports.
func TestDocsNameEveryMetric(t *testing.T) {
	doc, err := os.ReadFile("../../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range metrics.Names() {
		if !strings.Contains(string(doc), "| `"+name+"` |") {
			t.Errorf("docs/observability.md has no row for %s", name)
		}
	}
}
