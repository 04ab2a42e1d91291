package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/meshtest"
)

// TestLoopExamples runs examples/pipelines/for-each.yaml, repeat.yaml,
// sub-pipeline.yaml and join.yaml with `agentmesh run FILE --var ...`
// against the built-in TextAgent: the progress lines show the loops'
// progress and outcome, the child run, and the join.
func TestLoopExamples(t *testing.T) {
	mesh := meshtest.New(t)
	srv := mesh.Srv
	textMesh{agentOpts: []agents.Option{agents.WithConcurrency(4)}}.start(t, mesh)

	for _, tc := range []struct {
		file string
		args []string
		want []string
	}{
		{file: "for-each.yaml", want: []string{
			"each         TextAgent            running: 1 of 5 items ended",
			"each         TextAgent            completed", "5 items, 3 at a time [text TEXT]",
			"│ Red Fish\n", "│ This One Has A Little Star\n", "counted 14 words",
		}},
		{file: "for-each.yaml", args: []string{"--var", "words=one fish, two fish"}, want: []string{"│ One Fish\n", "│ Two Fish\n", "counted 4 words"}},
		{file: "repeat.yaml", want: []string{
			"flip         TextAgent            running: iteration 2 of at most 4: the condition did not hold after iteration 1",
			`"output.text == steps.start.outputs.text" held after iteration 2`, `"hello loop world"`,
		}},
		{file: "sub-pipeline.yaml", want: []string{
			"shout        (pipeline)           running: runs pipeline shout-back.yaml as run ",
			"completed", "SENILEPIP DETSEN", "senilepip detsen",
		}},
		{file: "join.yaml", want: []string{`whisper      TextAgent            skipped: router "route" chose "shout"`, "EREH EM NIOJ"}},
		{file: "join.yaml", args: []string{"--var", "style=whisper"}, want: []string{`shout        TextAgent            skipped`, "ereh em nioj"}},
	} {
		t.Run(tc.file+strings.Join(tc.args, ""), func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"--nats", srv.URL(), "run", "../../examples/pipelines/" + tc.file}, tc.args...)
			code := run(args, &out, &errOut)
			all := out.String() + errOut.String()
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
		})
	}
}

// TestPipelinesDirOrchestratorProcess runs a pipeline whose step runs
// shout-back by name against `agentmesh orchestrator --pipelines DIR` and
// `agentmesh agent TextAgent` processes: the flag reaches the replica, which
// finds the child in DIR.
func TestPipelinesDirOrchestratorProcess(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	dir := t.TempDir()
	b, err := os.ReadFile("../../examples/pipelines/shout-back.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shout-back.yaml"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(t.TempDir(), "by-name.yaml")
	if err := os.WriteFile(parent, []byte(`name: by-name
steps:
  - {id: shout, kind: pipeline, pipeline: {name: shout-back, inputs: {text: "text:by name"}, outputs: {out: back.text}}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, orchErr := startMetricsPair(t, srv.URL(), []string{"OPENAI_API_KEY=", "OPENAI_BASE_URL="}, "--pipelines", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitTextAgents(t, ctx, res, 1)

	var out, errOut bytes.Buffer
	if code := run([]string{"--nats", srv.URL(), "run", parent}, &out, &errOut); code != 0 {
		t.Fatalf("run: exit %d\n%s%s\norchestrator:\n%s", code, &out, &errOut, orchErr)
	}
	for _, want := range []string{"runs pipeline shout-back as run ", "pipeline shout-back (run ", "EMAN YB"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, &out)
		}
	}
}
