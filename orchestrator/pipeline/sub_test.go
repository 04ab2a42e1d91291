package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// shoutBack upper-cases then reverses its seed value text.
func shoutBack() pipelinespec.PipelineSpec {
	return client.NewPipeline("shout-back").
		SeedValue("text", schemas.TypeText, "", "default").
		Step("up", text.Name).Param("op", "upper").Input("text", "seed.text").
		Then("back", text.Name).Param("op", "reverse").
		MustBuild()
}

// TestSubPipeline: a step runs a child pipeline (inline, and by name from
// the orchestrator's pipelines directory) with an earlier output mapped
// in and the child's output mapped out to a later step; a child that
// fails fails the step with the child's error.
func TestSubPipeline(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../../examples/pipelines/shout-back.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shout-back.yaml"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	m := meshtest.New(t)
	m.Run(t, text.New())
	o := m.Orchestrator(t, []string{text.Name}, orchestrator.WithPipelinesDir(dir))

	for _, sub := range []*client.PipelineBuilder{
		client.NewPipeline("parent").SubPipeline("sub", shoutBack()),
		client.NewPipeline("parent").Pipeline("sub", "shout-back"),
	} {
		spec := sub.After("prep").MapIn("text", "prep.text").MapOut("out", "back.text").
			Step("prep", text.Name).Param("op", "title").Input("text", "seed.text").
			Step("after", text.Name).After("sub").Param("op", "lower").Input("text", "sub.out").
			SeedValue("text", schemas.TypeText, "", "hello there").
			MustBuild()
		id := m.Submit(t, spec, "")
		r := meshtest.WaitRun(t, o.Store(), id, 20*time.Second)
		if r.Status != schemas.RunCompleted {
			t.Fatalf("run %s: %s", r.Status, r.Error)
		}
		if got := meshtest.TextOut(t, r, "after"); got != "ereht olleh" {
			t.Errorf("after = %q, want the child's EREHT OLLEH lower-cased", got)
		}
		if s := r.Steps["sub"].Summary; !strings.Contains(s, "completed") || !strings.Contains(s, id+"-sub") {
			t.Errorf("sub summary %q", s)
		}
		child, err := o.Store().Run(context.Background(), id+"-sub")
		if err != nil || child.Status != schemas.RunCompleted || meshtest.TextOut(t, child, "up") != "HELLO THERE" {
			t.Fatalf("child run %v: %+v", err, child)
		}
	}

	// A child that fails (a step out of time) fails the step with its error.
	bad := shoutBack()
	bad.Steps[0].Params = map[string]any{"op": "upper", "delay_ms": 5000}
	bad.Steps[0].TimeoutMS = 200
	spec := client.NewPipeline("parent-bad").SubPipeline("sub", bad).MustBuild()
	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, ""), 20*time.Second)
	st := r.Steps["sub"]
	if r.Status != schemas.RunFailed || st.Status != schemas.StepFailed || !strings.Contains(st.Error, "pipeline shout-back (run ") ||
		!strings.Contains(st.Error, `step "up" (TextAgent) failed`) || !strings.Contains(st.Error, "timeout") {
		t.Fatalf("run %s (%s), step %+v", r.Status, r.Error, st)
	}
}

// TestForEachSubPipeline: a for_each runs a pipeline once per item, two
// at a time, each item the child's seed value, and merges the children's
// mapped outputs in item order.
func TestForEachSubPipeline(t *testing.T) {
	m := meshtest.New(t)
	m.Run(t, text.New())
	o := m.Orchestrator(t, []string{text.Name})
	spec := client.NewPipeline("each-child").
		Var("words", []any{"ab", "cd", "ef", "gh"}).
		SubPipeline("each", shoutBack()).MapOut("out", "back.text").ForEach("vars.words", 2).
		Step("after", text.Name).After("each").Param("op", "lower").Input("text", "each.out").
		MustBuild()
	id := m.Submit(t, spec, "")
	r := meshtest.WaitRun(t, o.Store(), id, 20*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	if got := meshtest.TextOut(t, r, "after"); got != "ba\ndc\nfe\nhg" {
		t.Errorf("after = %q", got)
	}
	for i := range 4 {
		child, err := o.Store().Run(context.Background(), fmt.Sprintf("%s-each-%d", id, i))
		if err != nil || child.Status != schemas.RunCompleted {
			t.Fatalf("child run %d: %v %+v", i, err, child)
		}
	}

	// An item's child that fails fails the step.
	bad := shoutBack()
	bad.Steps[0].Params = map[string]any{"op": "upper", "delay_ms": 5000}
	bad.Steps[0].TimeoutMS = 200
	spec = client.NewPipeline("each-bad").Var("words", []any{"ab"}).
		SubPipeline("each", bad).ForEach("vars.words", 2).MustBuild()
	r = meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, ""), 20*time.Second)
	if st := r.Steps["each"]; r.Status != schemas.RunFailed || !strings.Contains(st.Error, "item 1 of 1") || !strings.Contains(st.Error, "timeout") {
		t.Fatalf("run %s: step %+v", r.Status, st)
	}
}

// TestSubPipelineRefusedAtSubmit: a pipeline that runs itself by name,
// a name with no file, and mappings the child does not declare are
// refused before anything runs.
func TestSubPipelineRefusedAtSubmit(t *testing.T) {
	dir := t.TempDir()
	loop := "name: loop-a\nsteps:\n  - {id: again, kind: pipeline, pipeline: {name: loop-b}}\n"
	loopB := "name: loop-b\nsteps:\n  - {id: back, kind: pipeline, pipeline: {name: loop-a}}\n"
	for name, body := range map[string]string{"loop-a.yaml": loop, "loop-b.yaml": loopB} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m := meshtest.New(t)
	m.Run(t, text.New())
	o := m.Orchestrator(t, []string{text.Name}, orchestrator.WithPipelinesDir(dir))
	spec := client.NewPipeline("loop-a").
		Pipeline("cyc", "loop-b").
		Pipeline("nofile", "nowhere").
		SubPipeline("badmap", shoutBack()).MapIn("nope", "seed.text").MapOut("x", "missing.text").
		SubPipeline("badeach", shoutBack()).ForEach("seed.text", 2).ItemInput("nope").
		SeedValue("text", schemas.TypeText, "", "hi").
		MustBuild()
	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, ""), 20*time.Second)
	if r.Status != schemas.RunFailed || r.Code != schemas.CodeInvalidPipeline {
		t.Fatalf("run %s (%s): %s", r.Status, r.Code, r.Error)
	}
	for _, want := range []string{
		`pipeline loop-a runs itself (loop-a -> loop-b -> loop-a)`,
		`no pipeline "nowhere" in`,
		`pipeline.inputs.nope: pipeline shout-back declares no seed value "nope"`,
		`pipeline.outputs.x: pipeline shout-back has no step "missing"`,
		`step "badeach": for_each.input "nope" is not a seed value of pipeline shout-back (its seed values: text)`,
	} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("error lacks %q:\n%s", want, r.Error)
		}
	}
}
