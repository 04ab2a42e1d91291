package metrics

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmesh/agentmesh/schemas"
)

// Namespace prefixes every metric of the mesh.
const Namespace = "agentmesh"

// Buckets of the duration histograms, in seconds: tasks and turns run from
// milliseconds (a text transform) to minutes (a model thinking).
var (
	TaskBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	TurnBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
)

// Values of the kind label of the token counters.
const (
	KindPrompt     = "prompt"
	KindCompletion = "completion"
)

// Names lists every metric the package defines, sorted: what the
// Observer feeds and what a MeshCollector reports.
func Names() []string {
	return []string{
		"agentmesh_agents_live",
		"agentmesh_chat_turn_duration_seconds",
		"agentmesh_chat_turns_total",
		"agentmesh_consumer_ack_pending",
		"agentmesh_consumer_pending",
		"agentmesh_dead_letters_total",
		"agentmesh_llm_call_duration_seconds",
		"agentmesh_llm_calls_total",
		"agentmesh_llm_cost_usd_total",
		"agentmesh_llm_tokens_total",
		"agentmesh_pipeline_runs_total",
		"agentmesh_pipeline_steps_total",
		"agentmesh_task_cost_usd_total",
		"agentmesh_task_duration_seconds",
		"agentmesh_task_redeliveries_total",
		"agentmesh_task_tokens_total",
		"agentmesh_tasks_in_flight",
		"agentmesh_tasks_total",
	}
}

// Observer counts what the agent runtime and the orchestrator observe (see
// schemas.Observer). Every metric it feeds is registered by New; an
// observation updates a few counters and returns. It is safe for
// concurrent use.
type Observer struct {
	tasks        *prometheus.CounterVec   // agent, outcome
	taskDuration *prometheus.HistogramVec // agent
	inFlight     *prometheus.GaugeVec     // agent
	redeliveries *prometheus.CounterVec   // agent
	deadLetters  *prometheus.CounterVec   // agent
	taskTokens   *prometheus.CounterVec   // agent, kind
	taskCost     *prometheus.CounterVec   // agent
	runs         *prometheus.CounterVec   // outcome
	steps        *prometheus.CounterVec   // agent, outcome
	turns        *prometheus.CounterVec   // outcome
	turnDuration prometheus.Histogram
	llmCalls     *prometheus.CounterVec // model, outcome
	llmTokens    *prometheus.CounterVec // model, kind
	llmCost      *prometheus.CounterVec // model
	llmDuration  *prometheus.HistogramVec
}

// New registers the mesh's metrics on reg and returns the observer that
// feeds them. It fails when reg holds metrics of the same names already
// (one Observer per registry).
func New(reg prometheus.Registerer) (*Observer, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	}
	o := &Observer{
		tasks: counter("tasks_total", "Tasks that ended on this instance, by agent and outcome (completed, failed, retry, dead_letter, duplicate).", "agent", "outcome"),
		taskDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "task_duration_seconds",
			Help: "Time from taking a task from the bus to its end, by agent.", Buckets: TaskBuckets}, []string{"agent"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "tasks_in_flight",
			Help: "Tasks taken from the bus and not yet ended, by agent."}, []string{"agent"}),
		redeliveries: counter("task_redeliveries_total", "Tasks taken again after an earlier delivery (delivery count above 1), by agent.", "agent"),
		deadLetters:  counter("dead_letters_total", "Tasks given up and dead-lettered, by agent.", "agent"),
		taskTokens:   counter("task_tokens_total", "Tokens the agents reported in their results, by agent and kind (prompt, completion).", "agent", "kind"),
		taskCost:     counter("task_cost_usd_total", "Cost in US dollars the agents reported in their results, by agent.", "agent"),
		runs:         counter("pipeline_runs_total", "Pipeline runs that ended, by outcome (completed, failed).", "outcome"),
		steps:        counter("pipeline_steps_total", "Pipeline steps that ended, by agent and outcome (completed, failed, skipped).", "agent", "outcome"),
		turns:        counter("chat_turns_total", "Chat turns that ended, by outcome (completed, step_limit_reached, failed).", "outcome"),
		turnDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "chat_turn_duration_seconds",
			Help: "Time of a chat turn from its request to its answer.", Buckets: TurnBuckets}),
		llmCalls:  counter("llm_calls_total", "Model calls of chat turns, by model and outcome (ok, error).", "model", "outcome"),
		llmTokens: counter("llm_tokens_total", "Tokens of the chat turns' model calls, by model and kind (prompt, completion).", "model", "kind"),
		llmCost:   counter("llm_cost_usd_total", "Cost in US dollars of the chat turns' model calls, by model (0 for a model with no price).", "model"),
		llmDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "llm_call_duration_seconds",
			Help: "Time of one model call of a chat turn, by model.", Buckets: TaskBuckets}, []string{"model"}),
	}
	for _, c := range []prometheus.Collector{o.tasks, o.taskDuration, o.inFlight, o.redeliveries, o.deadLetters, o.taskTokens, o.taskCost,
		o.runs, o.steps, o.turns, o.turnDuration, o.llmCalls, o.llmTokens, o.llmCost, o.llmDuration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: registering the mesh's metrics: %w (one metrics.Observer per registry)", err)
		}
	}
	return o, nil
}

// Observe implements schemas.Observer.
func (o *Observer) Observe(_ context.Context, ob schemas.Observation) {
	switch ob := ob.(type) {
	case schemas.TaskReceived:
		o.inFlight.WithLabelValues(ob.Agent).Inc()
		if ob.Delivery > 1 {
			o.redeliveries.WithLabelValues(ob.Agent).Inc()
		}
	case schemas.TaskFinished:
		o.taskFinished(ob)
	case schemas.StepChanged:
		switch ob.Status {
		case schemas.StepCompleted, schemas.StepFailed, schemas.StepSkipped:
			o.steps.WithLabelValues(ob.Agent, ob.Status).Inc()
		}
	case schemas.RunChanged:
		if ob.Status != schemas.RunRunning {
			o.runs.WithLabelValues(ob.Status).Inc()
		}
	case schemas.LLMCalled:
		o.llmCalled(ob)
	case schemas.ChatTurnEnded:
		o.turns.WithLabelValues(ob.State).Inc()
		o.turnDuration.Observe(ob.Duration.Seconds())
	}
}

func (o *Observer) taskFinished(f schemas.TaskFinished) {
	o.inFlight.WithLabelValues(f.Agent).Dec()
	o.tasks.WithLabelValues(f.Agent, f.Outcome).Inc()
	o.taskDuration.WithLabelValues(f.Agent).Observe(f.Duration.Seconds())
	if f.Outcome == schemas.OutcomeDeadLetter {
		o.deadLetters.WithLabelValues(f.Agent).Inc()
	}
	addTokens(o.taskTokens, f.Agent, f.Metrics.Tokens)
	addCost(o.taskCost.WithLabelValues(f.Agent), f.Metrics.Cost)
}

func (o *Observer) llmCalled(c schemas.LLMCalled) {
	model := c.Model
	if model == "" {
		model = "unknown"
	}
	outcome := "ok"
	if c.Err != nil {
		outcome = "error"
	}
	o.llmCalls.WithLabelValues(model, outcome).Inc()
	o.llmDuration.WithLabelValues(model).Observe(c.Duration.Seconds())
	addTokens(o.llmTokens, model, c.Tokens)
	addCost(o.llmCost.WithLabelValues(model), c.Cost)
}

// addTokens adds t to the prompt and completion series of by; a counter
// only goes up, so negative counts (never sent by a sane model) are dropped.
func addTokens(vec *prometheus.CounterVec, by string, t schemas.Tokens) {
	if t.Prompt > 0 {
		vec.WithLabelValues(by, KindPrompt).Add(float64(t.Prompt))
	}
	if t.Completion > 0 {
		vec.WithLabelValues(by, KindCompletion).Add(float64(t.Completion))
	}
}

// addCost adds a positive cost to c; c's series exists from its first
// observation on, at 0 while nothing it counts has a price.
func addCost(c prometheus.Counter, usd float64) {
	if usd > 0 {
		c.Add(usd)
	}
}
