package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
)

// TestWorkflowExamples runs examples/pipelines/conditions.yaml and
// router.yaml and evaluator.yaml with `agentmesh run FILE --var ...`
// against the built-in TextAgent and an orchestrator with a scripted model:
// the progress lines show the router's and the evaluator's outcome and the
// steps a condition or the router skipped, with the reason.
func TestWorkflowExamples(t *testing.T) {
	mesh := meshtest.New(t)
	srv := mesh.Srv
	// The model: routers are answered with the style the run's variables
	// name, evaluators with a score of 0.9.
	llmSrv := llmtest.New(t)
	llmSrv.Handle(func(r llmtest.Request) llmtest.Reply {
		user := r.MessagesOf("user")[0].Content
		if strings.Contains(r.MessagesOf("system")[0].Content, "evaluate") {
			return llmtest.Answer(`{"score": 0.9, "reasoning": "all capitals"}`)
		}
		if m := regexp.MustCompile(`"style":"(\w+)"`).FindStringSubmatch(user); m != nil && m[1] != "other" {
			return llmtest.Answer(m[1])
		}
		return llmtest.Answer("none of them")
	})
	model, err := llm.New(llmSrv.Config())
	if err != nil {
		t.Fatal(err)
	}
	textMesh{orchOpts: []orchestrator.Option{orchestrator.WithModel(model)}}.start(t, mesh)

	for _, tc := range []struct {
		file string
		args []string
		want []string
		code int
	}{
		{file: "conditions.yaml", want: []string{
			"shout        TextAgent            completed", "HELLO BIG WORLD",
			`whisper      TextAgent            skipped: condition "vars.mode == \"quiet\"" is false`,
			`title        TextAgent            skipped: dependency "whisper" was skipped`,
		}},
		{file: "conditions.yaml", args: []string{"--var", "mode=quiet"}, want: []string{"hello big world", "Hello Big World", "shout        TextAgent            skipped"}},
		{file: "conditions.yaml", args: []string{"--var", "min_words=many"}, code: 1,
			want: []string{`--var min_words=many: "many" is not a number, and the variable's default 2 is`}},
		{file: "conditions.yaml", args: []string{"--var", "colour=red"}, code: 1,
			want: []string{`pipeline "moods" declares no variable "colour" (its vars: min_words, mode)`}},
		{file: "router.yaml", want: []string{
			`route        (router)             completed`, `the model chose "shout" [branch TEXT]`,
			"ROUTE ME SOMEWHERE", `reverse      TextAgent            skipped: router "route" chose "shout"`,
			`count        TextAgent            skipped: dependency "reverse" was skipped`,
		}},
		{file: "router.yaml", args: []string{"--var", "style=reverse"}, want: []string{"erehwemos em etuoR", "counted 3 words"}},
		{file: "router.yaml", args: []string{"--var", "style=other"}, want: []string{
			`the model answered "none of them", which is no branch; chose "plain": the default`, "route me somewhere"}},
		{file: "evaluator.yaml", want: []string{"judge        (evaluator)          completed", "score 0.90: all capitals [evaluation EVALUATION]",
			"EREHT OLLEH", "redo         TextAgent            skipped"}},
		{file: "evaluator.yaml", args: []string{"--var", "pass=0.95"}, want: []string{"hello there", "publish      TextAgent            skipped"}},
	} {
		t.Run(tc.file+strings.Join(tc.args, ""), func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"--nats", srv.URL(), "run", "../../examples/pipelines/" + tc.file}, tc.args...)
			code := run(args, &out, &errOut)
			all := out.String() + errOut.String()
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
		})
	}
}

// TestRouterOrchestratorProcess runs router.yaml against `agentmesh agent
// TextAgent` and `agentmesh orchestrator` processes, the orchestrator's LLM
// (OPENAI_BASE_URL) a scripted server that picks "reverse" although the
// rules would pick "shout": the command wires its model into routers.
func TestRouterOrchestratorProcess(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	model := llmtest.New(t, llmtest.Answer("reverse"))
	_, _, orchErr := startMetricsPair(t, srv.URL(), []string{"OPENAI_BASE_URL=" + model.URL(), "OPENAI_API_KEY=test-key"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitTextAgents(t, ctx, res, 1)

	var out, errOut bytes.Buffer
	if code := run([]string{"--nats", srv.URL(), "run", "../../examples/pipelines/router.yaml"}, &out, &errOut); code != 0 {
		t.Fatalf("run: exit %d\n%s%s\norchestrator:\n%s", code, &out, &errOut, orchErr)
	}
	for _, want := range []string{`the model chose "reverse"`, "erehwemos em etuoR", `shout        TextAgent            skipped: router "route" chose "reverse"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, &out)
		}
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
}
