package pipeline_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

func wantSkipped(t *testing.T, r *state.RunState, step, reason string) {
	t.Helper()
	st := r.Steps[step]
	if st == nil || st.Status != schemas.StepSkipped || !strings.Contains(st.Reason, reason) {
		t.Fatalf("step %s is %+v, want skipped with reason containing %q", step, st, reason)
	}
}

// conditionSpec counts the words of its seed text, then shouts or whispers
// it as vars.mode says; echo follows whisper.
func conditionSpec(t *testing.T) pipelinespec.PipelineSpec {
	return client.NewPipeline("moods").
		SeedValue("text", schemas.TypeText, "", "Hello big World").
		Var("mode", "loud").Var("op", "upper").Var("min_words", 2).
		Step("count", text.Name).Param("op", "wordcount").Input("text", "seed.text").
		Then("shout", text.Name).Param("op", "${vars.op}").Input("text", "seed.text").
		When(`vars.mode == "loud" && int(steps.count.outputs.text) > vars.min_words && steps.count.status == "completed"`).
		Step("whisper", text.Name).After("count").Param("op", "lower").Input("text", "seed.text").When(`vars.mode == "quiet"`).
		Then("echo", text.Name).Input("text", "seed.text").
		MustBuild()
}

// TestConditionSkipsStepAndDependants runs the same pipeline with its
// default vars and with vars set at submit: the false condition skips its
// step and the step after it, with the reason, and the run completes.
func TestConditionSkipsStepAndDependants(t *testing.T) {
	m := meshtest.New(t)
	m.Run(t, text.New())
	o := m.Orchestrator(t, []string{text.Name})

	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, conditionSpec(t), "loud"), 10*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	if got := meshtest.TextOut(t, r, "shout"); got != "HELLO BIG WORLD" {
		t.Errorf("shout = %q", got)
	}
	wantSkipped(t, r, "whisper", `condition "vars.mode == \"quiet\"" is false`)
	wantSkipped(t, r, "echo", `dependency "whisper" was skipped`)

	spec, err := client.SetVars(conditionSpec(t), []string{"mode=quiet", "op=reverse"})
	if err != nil {
		t.Fatal(err)
	}
	r = meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, "quiet"), 10*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	wantSkipped(t, r, "shout", "is false")
	if got := meshtest.TextOut(t, r, "whisper"); got != "hello big world" {
		t.Errorf("whisper = %q", got)
	}
	if got := meshtest.TextOut(t, r, "echo"); got != "HELLO BIG WORLD" {
		t.Errorf("echo = %q", got)
	}

	// A var read in params resolves to the value given at submit.
	spec, err = client.SetVars(conditionSpec(t), []string{"op=reverse"})
	if err != nil {
		t.Fatal(err)
	}
	r = meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, "reversed"), 10*time.Second)
	if got := meshtest.TextOut(t, r, "shout"); got != "dlroW gib olleH" {
		t.Errorf("shout with op=reverse = %q", got)
	}
}

// TestInvalidConditionsRejectedAtSubmit: every bad condition, variable
// and reference is reported at once, and nothing runs.
func TestInvalidConditionsRejectedAtSubmit(t *testing.T) {
	m := meshtest.New(t)
	m.Run(t, text.New())
	o := m.Orchestrator(t, []string{text.Name})
	spec := client.NewPipeline("bad").
		SeedValue("text", schemas.TypeText, "", "hi").
		Var("n", 3).Var("must", nil).
		Step("a", text.Name).Input("text", "seed.text").When(`vars.n + "x" == "3x"`).
		Then("b", text.Name).Input("text", "seed.text").When(`vars.nope > 1`).Param("op", "${vars.missing}").
		Step("c", text.Name).Input("text", "seed.text").When(`steps.b.status == "completed"`).
		Step("d", text.Name).Input("text", "seed.text").When(`vars.n >`).
		Step("e", text.Name).Input("text", "seed.text").When(`vars.n`).
		MustBuild()
	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, "bad"), 10*time.Second)
	if r.Status != schemas.RunFailed || r.Code != schemas.CodeInvalidPipeline {
		t.Fatalf("run %s (%s), want failed invalid_pipeline", r.Status, r.Code)
	}
	for _, want := range []string{
		`variable "must" has no value`,
		`step "a": when: bad condition "vars.n + \"x\" == \"3x\"": invalid operation: + (mismatched types float64 and string)`,
		`step "b": when: bad condition "vars.nope > 1": variable "nope" is not declared (vars: must, n)`,
		`step "b": unknown variable: "${vars.missing}" is not declared`,
		`step "c": when: bad condition "steps.b.status == \"completed\"": step "b" does not run before this step`,
		`step "d": when: bad condition "vars.n >"`,
		`step "e": when: bad condition "vars.n"`,
	} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("error lacks %q:\n%s", want, r.Error)
		}
	}
	for id, st := range r.Steps {
		if st.Status != schemas.StepPending {
			t.Errorf("step %s is %s: nothing should run", id, st.Status)
		}
	}
}

// routerSpec routes its seed text to upper or lower case.
func routerSpec() pipelinespec.PipelineSpec {
	return client.NewPipeline("routed").
		SeedValue("text", schemas.TypeText, "", "Route Me").
		Var("style", "shout").
		Router("route", "quiet",
			pipelinespec.RouterBranch{Step: "loud", When: `vars.style == "shout"`, Description: "upper-cases the text"},
			pipelinespec.RouterBranch{Step: "quiet", Description: "lower-cases the text"}).
		RouterPrompt("Which way should the text go?").
		Then("loud", text.Name).Param("op", "upper").Input("text", "seed.text").
		Then("after_loud", text.Name).Param("op", "reverse").Input("text", "seed.text").
		Step("quiet", text.Name).After("route").Param("op", "lower").Input("text", "seed.text").
		MustBuild()
}

// TestRouterRules: without a model the first rule that holds chooses the
// branch, else the default; the other branch and its dependants are
// skipped with the router's choice as the reason.
func TestRouterRules(t *testing.T) {
	m := meshtest.New(t)
	m.Run(t, text.New())
	o := m.Orchestrator(t, []string{text.Name})

	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, routerSpec(), "rule"), 10*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	if got := meshtest.TextOut(t, r, "loud"); got != "ROUTE ME" {
		t.Errorf("loud = %q", got)
	}
	wantSkipped(t, r, "quiet", `router "route" chose "loud"`)
	if !strings.Contains(r.Steps["route"].Summary, `vars.style == "shout" holds`) {
		t.Errorf("router summary %q", r.Steps["route"].Summary)
	}

	spec, err := client.SetVars(routerSpec(), []string{"style=whisper"})
	if err != nil {
		t.Fatal(err)
	}
	r = meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, "default"), 10*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	if got := meshtest.TextOut(t, r, "quiet"); got != "route me" {
		t.Errorf("quiet = %q", got)
	}
	wantSkipped(t, r, "loud", `router "route" chose "quiet"`)
	wantSkipped(t, r, "after_loud", `dependency "loud" was skipped`)
}

// TestRouterModel: with a model the branch it names is chosen over the
// rules; a reply that names no branch falls back to the rules.
func TestRouterModel(t *testing.T) {
	srv := llmtest.New(t, llmtest.Answer(" Quiet. "), llmtest.Answer("sideways"))
	model, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	m := meshtest.New(t)
	m.Run(t, text.New())
	o := m.Orchestrator(t, []string{text.Name}, orchestrator.WithModel(model))

	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, routerSpec(), "model"), 10*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	if got := meshtest.TextOut(t, r, "quiet"); got != "route me" {
		t.Errorf("quiet = %q", got)
	}
	wantSkipped(t, r, "loud", `router "route" chose "quiet"`)
	if got := r.Steps["route"].Summary; got != `the model chose "quiet"` {
		t.Errorf("router summary %q", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want 1", len(reqs))
	}
	user := reqs[0].MessagesOf("user")[0].Content
	for _, want := range []string{"Which way should the text go?", "- loud: upper-cases the text", "- quiet: lower-cases the text", `"style":"shout"`, "Route Me"} {
		if !strings.Contains(user, want) {
			t.Errorf("the model was not told %q:\n%s", want, user)
		}
	}

	r = meshtest.WaitRun(t, o.Store(), m.Submit(t, routerSpec(), "fallback"), 10*time.Second)
	if got := meshtest.TextOut(t, r, "loud"); got != "ROUTE ME" {
		t.Errorf("loud = %q", got)
	}
	if got := r.Steps["route"].Summary; !strings.Contains(got, `the model answered "sideways", which is no branch; chose "loud"`) {
		t.Errorf("router summary %q", got)
	}
}

// evaluatorSpec shouts its text, has the model judge it, and publishes it
// when the score is high enough, else tones it down.
func evaluatorSpec() pipelinespec.PipelineSpec {
	return client.NewPipeline("judged").
		SeedValue("text", schemas.TypeText, "", "Hello there").
		Var("pass", 0.7).
		Step("draft", text.Name).Param("op", "upper").Input("text", "seed.text").
		Evaluator("judge", "draft.text", "Is the text shouted, all in capitals?").
		Then("publish", text.Name).Param("op", "reverse").Input("text", "draft.text").After("draft").
		When(`steps.judge.outputs.evaluation.score >= vars.pass`).
		Step("redo", text.Name).After("judge").Param("op", "lower").Input("text", "seed.text").
		When(`steps.judge.outputs.evaluation.score < vars.pass`).
		MustBuild()
}

// TestEvaluator: the scripted model's score is recorded as an EVALUATION
// that later conditions read; without a model the pipeline is refused at
// submit.
func TestEvaluator(t *testing.T) {
	srv := llmtest.New(t, llmtest.Answer("```json\n{\"score\": 0.9, \"reasoning\": \"every letter is a capital\"}\n```"))
	model, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	m := meshtest.New(t)
	m.Run(t, text.New())
	o := m.Orchestrator(t, []string{text.Name}, orchestrator.WithModel(model))

	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, evaluatorSpec(), "judged"), 10*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	if got := meshtest.TextOut(t, r, "publish"); got != "EREHT OLLEH" {
		t.Errorf("publish = %q", got)
	}
	wantSkipped(t, r, "redo", "is false")
	ev := r.Steps["judge"].Outputs["evaluation"]
	var e schemas.Evaluation
	if ev.DataType != schemas.TypeEvaluation || json.Unmarshal(ev.Value, &e) != nil || e.Score != 0.9 || e.Reasoning != "every letter is a capital" {
		t.Fatalf("judge output %s %s", ev.DataType, ev.Value)
	}
	if err := schemas.DefaultRegistry().Validate(ev.DataType, ev.Value); err != nil {
		t.Errorf("the evaluation fails its data type's schema: %v", err)
	}
	user := srv.Requests()[0].MessagesOf("user")[0].Content
	if !strings.Contains(user, "Is the text shouted, all in capitals?") || !strings.Contains(user, "HELLO THERE") {
		t.Errorf("the model was not told the criteria and the output:\n%s", user)
	}

	// A second replica without a model refuses an evaluator at submit.
	m2 := meshtest.New(t)
	m2.Run(t, text.New())
	o2 := m2.Orchestrator(t, []string{text.Name})
	r = meshtest.WaitRun(t, o2.Store(), m2.Submit(t, evaluatorSpec(), "nomodel"), 10*time.Second)
	if r.Status != schemas.RunFailed || !strings.Contains(r.Error, `step "judge": no model: an evaluator needs an LLM`) {
		t.Fatalf("run without a model: %s %s", r.Status, r.Error)
	}
}

// TestWorkflowAcrossReplicas: with two replicas sharing the runs, routed
// and conditional runs end the same way whichever replica starts which
// step: the router's choice and the skips are read from the run's state.
func TestWorkflowAcrossReplicas(t *testing.T) {
	m := meshtest.New(t)
	m.Run(t, text.New(), agents.WithConcurrency(4))
	a := m.Orchestrator(t, []string{text.Name})
	m.Orchestrator(t, []string{text.Name})
	var ids []string
	for i := range 6 {
		spec := routerSpec()
		if i%2 == 1 {
			spec, _ = client.SetVars(spec, []string{"style=whisper"})
		}
		ids = append(ids, m.Submit(t, spec, fmt.Sprintf("r%d", i)))
		ids = append(ids, m.Submit(t, conditionSpec(t), fmt.Sprintf("c%d", i)))
	}
	for i, id := range ids {
		r := meshtest.WaitRun(t, a.Store(), id, 20*time.Second)
		if r.Status != schemas.RunCompleted {
			t.Fatalf("run %s %s: %s", id, r.Status, r.Error)
		}
		switch {
		case i%2 == 1:
			wantSkipped(t, r, "whisper", "is false")
		case i%4 == 0:
			wantSkipped(t, r, "quiet", `router "route" chose "loud"`)
		default:
			wantSkipped(t, r, "loud", `router "route" chose "quiet"`)
		}
	}
}
