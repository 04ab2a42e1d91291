package main

import (
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/knowledge"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/resolvers"
)

// TestEvalExamples runs the repository's README and knowledge eval sets with the offline
// planner over the built-in agents and the sample files, as CI does: every
// case passes, the JUnit XML lists each run; a set whose expectation the
// answer misses exits 1 and says what it missed.
func TestEvalExamples(t *testing.T) {
	m := meshtest.New(t)
	names := builtinNames()
	m.Builtins(t, append(samples.Images(), samples.Documents()...), names...)
	m.Orchestrator(t, names, orchestrator.WithChat())
	url := m.Srv.URL()

	junit := filepath.Join(t.TempDir(), "eval.xml")
	code, out, errOut := runArgs("--nats", url, "eval", "../../examples/evals/readme.yaml", "--junit", junit)
	if code != 0 || !strings.Contains(out, "5 of 5 cases passed") {
		t.Fatalf("eval readme.yaml: exit %d\n%s%s", code, out, errOut)
	}
	raw, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(raw, &doc); err != nil || len(doc.Suites) != 1 || doc.Suites[0].Tests != 5 || doc.Suites[0].Failures != 0 {
		t.Errorf("JUnit XML %+v (%v):\n%s", doc, err, raw)
	}

	code, out, errOut = runArgs("--nats", url, "eval", "../../examples/evals/knowledge.yaml")
	if code != 0 || !strings.Contains(out, "4 of 4 cases passed") {
		t.Errorf("eval knowledge.yaml: exit %d\n%s%s", code, out, errOut)
	}

	failing := filepath.Join(t.TempDir(), "failing.yaml")
	set := "name: failing\nruns: 2\ncases:\n  - name: wrong words\n    chat: reverse the text hello world\n    expect: {contains: [hello world], agents: [ImageSearchAgent]}\n"
	if err := os.WriteFile(failing, []byte(set), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runArgs("--nats", url, "eval", failing, "--json")
	if code != 1 || !strings.Contains(errOut, "1 of 1 cases of "+failing+" failed") ||
		!strings.Contains(out, `"pass_rate": 0`) || !strings.Contains(out, "want ImageSearchAgent in that order") {
		t.Errorf("failing set: exit %d\n%s%s", code, out, errOut)
	}

	for _, tt := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"eval"}, 2, "accepts 1 arg(s)"},
		{[]string{"eval", failing, "--runs", "-1"}, 2, "--runs -1"},
		{[]string{"eval", "../../examples/evals/nope.yaml"}, 1, "no such file"},
		{[]string{"eval", "../../README.md"}, 1, "invalid eval set"},
	} {
		code, _, errOut := runArgs(append(tt.args, "--nats", url)...)
		if code != tt.code || !strings.Contains(errOut, tt.says) {
			t.Errorf("%v: exit %d %q, want %d saying %q", tt.args, code, errOut, tt.code, tt.says)
		}
	}
}

// TestEvalPlanner runs examples/evals/planner.yaml, the offline planner's
// requests with the plans its table test expects, over the built-in
// agents and the sample files: every case passes. The same request with
// another plan expected fails, saying which agents ran.
func TestEvalPlanner(t *testing.T) {
	m := meshtest.New(t)
	names := builtinNames()
	m.Builtins(t, append(samples.Images(), samples.Documents()...), names...)
	m.Orchestrator(t, names, orchestrator.WithChat())
	url := m.Srv.URL()

	code, out, errOut := runArgs("--nats", url, "eval", "../../examples/evals/planner.yaml")
	if code != 0 || !strings.Contains(out, "12 of 12 cases passed") {
		t.Fatalf("eval planner.yaml: exit %d\n%s%s", code, out, errOut)
	}
	wrong := filepath.Join(t.TempDir(), "wrong.yaml")
	set := "name: wrong\ncases:\n  - name: limit\n    chat: find 3 sunset images\n    expect: {params: {ImageSearchAgent: {limit: 4}}}\n"
	if err := os.WriteFile(wrong, []byte(set), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runArgs("--nats", url, "eval", wrong); code != 1 || !strings.Contains(out+errOut, "limit") {
		t.Errorf("a wrong plan expected: exit %d\n%s%s", code, out, errOut)
	}
}

// TestEvalScoresTheRefundFlow runs examples/evals/refund.yaml against a
// mesh with the sample documents in the knowledge base "samples" (as up
// stores them), KnowledgeAgent, and a scripted model that calls it and
// answers from the passages the state shows: the eval passes. The same
// model answering without the passages fails it.
func TestEvalScoresTheRefundFlow(t *testing.T) {
	m := meshtest.New(t)
	ctx := context.Background()
	if _, err := storeSamples(ctx, m.Res.Files); err != nil {
		t.Fatal(err)
	}
	agent, err := knowledge.New(resolvers.NewObjectStore(m.Res.Files), m.Res.Files)
	if err != nil {
		t.Fatal(err)
	}
	m.Run(t, agent)
	srv := llmtest.New(t)
	window := regexp.MustCompile(`[^."]*within 30 days of delivery[^."]*\.`)
	var quote atomic.Bool
	quote.Store(true)
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		if len(r.MessagesOf("tool")) == 0 {
			return llmtest.Calls(llmtest.Call(knowledge.Name, map[string]any{"query": "refund policy return window", "kb": SamplesKB}))
		}
		for _, msg := range r.MessagesOf("system") {
			if s := window.FindString(msg.Content); s != "" && quote.Load() {
				return llmtest.Answer("Our policy: " + s)
			}
		}
		return llmtest.Answer("I do not know.")
	})
	c, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	m.Orchestrator(t, []string{knowledge.Name}, orchestrator.WithChat(chat.WithLLM(c)))

	code, out, errOut := runArgs("--nats", m.Srv.URL(), "eval", "../../examples/evals/refund.yaml")
	if code != 0 || !strings.Contains(out, "1 of 1 cases passed") {
		t.Fatalf("eval refund.yaml: exit %d\n%s%s", code, out, errOut)
	}
	quote.Store(false)
	code, out, _ = runArgs("--nats", m.Srv.URL(), "eval", "../../examples/evals/refund.yaml")
	if code != 1 || !strings.Contains(out, `the answer lacks "30 days"`) {
		t.Errorf("an answer without the passage: exit %d\n%s", code, out)
	}
}

// TestEvalPipelines runs examples/evals/pipelines.yaml (the README's
// pipeline, a workflow with vars, an inline pipeline) against the
// built-in agents and the sample files: every case passes. A set whose
// run misses its expectations on outputs, trajectory, params and status
// fails and names each miss.
func TestEvalPipelines(t *testing.T) {
	m := meshtest.New(t)
	names := builtinNames()
	m.Builtins(t, append(samples.Images(), samples.Documents()...), names...)
	m.Orchestrator(t, names)
	url := m.Srv.URL()

	code, out, errOut := runArgs("--nats", url, "eval", "../../examples/evals/pipelines.yaml")
	if code != 0 || !strings.Contains(out, "3 of 3 cases passed") {
		t.Fatalf("eval pipelines.yaml: exit %d\n%s%s", code, out, errOut)
	}

	failing := filepath.Join(t.TempDir(), "failing.yaml")
	set := `name: failing
cases:
  - name: loud
    pipeline: ` + filepath.Join(mustAbs(t, "../../examples/pipelines"), "conditions.yaml") + `
    vars: {mode: loud}
    expect:
      agents: [TextAgent, TextAgent, TextAgent]
      params: {whisper: {op: lower}}
      outputs: {whisper.text: {contains: [hello]}, count.text: {schema: {type: string, pattern: '^9$'}}}
  - name: unknown agent
    pipeline: {name: bad, steps: [{id: a, agent: NoSuchAgent}]}
    expect: {state: completed}
`
	if err := os.WriteFile(failing, []byte(set), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runArgs("--nats", url, "eval", failing, "--json")
	out = strings.ReplaceAll(out, `\u003e`, ">")
	for _, want := range []string{
		"agents called TextAgent -> TextAgent, want TextAgent -> TextAgent -> TextAgent in that order",
		"whisper was not called, so its params cannot be checked",
		"no output whisper.text (outputs: count.text, shout.text)",
		"output count.text does not meet the schema: ",
		"state failed, want completed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the results lack %q:\n%s", want, out)
		}
	}
	if code != 1 || !strings.Contains(errOut, "2 of 2 cases of "+failing+" failed") {
		t.Errorf("failing set: exit %d\n%s%s", code, out, errOut)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: bad\ncases:\n  - {name: a, pipeline: nope.yaml}\n  - {name: b, pipeline: "+mustAbs(t, "../../examples/pipelines/conditions.yaml")+", vars: {moood: x}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runArgs("--nats", url, "eval", bad)
	if code != 1 || !strings.Contains(errOut, `case "a": `) || !strings.Contains(errOut, `case "b": `) || !strings.Contains(errOut, "moood") {
		t.Errorf("a set whose pipelines cannot run: exit %d %s", code, errOut)
	}
}

func mustAbs(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestEvalJudge scores the offline planner's answer with a judge: the
// scripted model configured by AGENTMESH_MODEL gets the rubric and the
// answer; a high score passes the case, a low one fails it with the
// judge's reason. With no model configured the set is refused before any
// case runs, saying what to set.
func TestEvalJudge(t *testing.T) {
	for _, env := range []string{llm.EnvBaseURL, llm.EnvAPIKey, llm.EnvAnthropicBaseURL, llm.EnvAnthropicAPIKey,
		llm.EnvGeminiBaseURL, llm.EnvGeminiAPIKey, llm.EnvModel} {
		t.Setenv(env, "")
	}
	m := meshtest.New(t)
	m.Builtins(t, nil, "TextAgent")
	m.Orchestrator(t, []string{"TextAgent"}, orchestrator.WithChat())
	url := m.Srv.URL()
	file := filepath.Join(t.TempDir(), "judged.yaml")
	set := "name: judged\ncases:\n  - name: reversed\n    chat: reverse the text hello world\n    expect: {judge: {rubric: the answer holds the text reversed, pass: 0.7}}\n"
	if err := os.WriteFile(file, []byte(set), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runArgs("--nats", url, "eval", file)
	if code != 1 || !strings.Contains(errOut, "no model is configured") || !strings.Contains(errOut, llm.EnvModel) || strings.Contains(errOut+out, "reversed #1") {
		t.Fatalf("no model: exit %d\n%s%s", code, out, errOut)
	}

	srv := llmtest.New(t)
	var score atomic.Value
	score.Store(`{"score": 0.9, "reason": "dlrow olleh is hello world reversed"}`)
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		asked := r.MessagesOf("user")
		if len(asked) == 0 || !strings.Contains(asked[0].Content, "the answer holds the text reversed") || !strings.Contains(asked[0].Content, "dlrow olleh") {
			return llmtest.Answer(`{"score": 0, "reason": "the request lacks the rubric or the answer"}`)
		}
		return llmtest.Answer(score.Load().(string))
	})
	t.Setenv(llm.EnvBaseURL, srv.URL())
	t.Setenv(llm.EnvAPIKey, "test-key")
	t.Setenv(llm.EnvModel, "judge-model")
	code, out, errOut = runArgs("--nats", url, "eval", file)
	if code != 0 || !strings.Contains(out, "1 of 1 cases passed") {
		t.Fatalf("a high score: exit %d\n%s%s", code, out, errOut)
	}
	score.Store(`{"score": 0.2, "reason": "the text is not reversed"}`)
	code, out, errOut = runArgs("--nats", url, "eval", file)
	if code != 1 || !strings.Contains(out, "the judge scored 0.20, under pass 0.70: the text is not reversed") {
		t.Errorf("a low score: exit %d\n%s%s", code, out, errOut)
	}
}
