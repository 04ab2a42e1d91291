package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestForEachThousandItems: a for_each over 1,000 items with parallelism 8
// runs each item once, never more than 8 at a time, merges the items'
// FILE_IDS in item order, and keeps its progress in one small value.
func TestForEachThousandItems(t *testing.T) {
	m := meshtest.New(t)
	f := &meshtest.Filer{}
	m.Agent(t, f.Contract(), f.Execute, 32)
	o := m.Orchestrator(t, []string{meshtest.FilerName})

	var lines []string
	for i := range 1000 {
		lines = append(lines, fmt.Sprintf("doc-%04d", i))
	}
	spec := client.NewPipeline("thousand").
		SeedValue("ids", schemas.TypeText, "", strings.Join(lines, "\n")).
		Step("each", meshtest.FilerName).ForEach("seed.ids", 8).
		MustBuild()
	id := m.Submit(t, spec, "")
	r := meshtest.WaitRun(t, o.Store(), id, 60*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	st := r.Steps["each"]
	fc, err := st.Outputs["files"].Files()
	if err != nil {
		t.Fatal(err)
	}
	if got := fc.IDs(); len(got) != 1000 || got[0] != "doc-0000" || got[999] != "doc-0999" || got[500] != "doc-0500" {
		t.Fatalf("merged %d ids (%v...), want doc-0000..doc-0999 in order", len(got), got[:min(3, len(got))])
	}
	if most := f.Most.Load(); most > 8 || most < 2 {
		t.Errorf("at most %d items ran at once, want 2..8", most)
	}
	if !strings.Contains(st.Summary, "1000 items, 8 at a time") {
		t.Errorf("summary %q", st.Summary)
	}
	// The progress is one small value, not one that grows with the items.
	e, err := o.Store().RunsBucket().Get(context.Background(), id+".loop.each")
	if err != nil {
		t.Fatal(err)
	}
	var p state.LoopProgress
	if err := json.Unmarshal(e.Value(), &p); err != nil {
		t.Fatal(err)
	}
	if len(e.Value()) > 512 || p.Low != 1000 || p.N != 1000 || len(p.Ended) != 0 {
		t.Errorf("progress %s (%d bytes)", e.Value(), len(e.Value()))
	}
}

// TestForEachItemFails: the first item that fails fails the step with the
// item and its error, and the run fails; a for_each with no items
// completes.
func TestForEachItemFails(t *testing.T) {
	m := meshtest.New(t)
	f := &meshtest.Filer{}
	m.Agent(t, f.Contract(), f.Execute, 4)
	o := m.Orchestrator(t, []string{meshtest.FilerName})
	spec := client.NewPipeline("one-bad").
		Var("ids", []any{"a", "b", "bad", "c"}).
		Step("each", meshtest.FilerName).ForEach("vars.ids", 1).
		MustBuild()
	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, ""), 20*time.Second)
	st := r.Steps["each"]
	if r.Status != schemas.RunFailed || st.Status != schemas.StepFailed ||
		!strings.Contains(st.Error, `item 3 of 4`) || !strings.Contains(st.Error, `file id "bad" is not one`) {
		t.Fatalf("run %s, step %+v", r.Status, st)
	}

	// No items: the step completes at once, with no outputs.
	spec = client.NewPipeline("none").Var("ids", []any{}).
		Step("each", meshtest.FilerName).ForEach("vars.ids", 2).MustBuild()
	r = meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, ""), 20*time.Second)
	if st := r.Steps["each"]; r.Status != schemas.RunCompleted || st.Summary != "0 items, 2 at a time" || len(st.Outputs) != 0 {
		t.Fatalf("run %s (%s), step %+v", r.Status, r.Error, st)
	}
}

// TestRepeatUntil: each iteration gets the previous one's output; the loop
// stops when until holds, or at max_iterations with the reason, and a
// step after it reads the last output.
func TestRepeatUntil(t *testing.T) {
	m := meshtest.New(t)
	var calls atomic.Int64
	m.Appender(t, &calls)
	o := m.Orchestrator(t, []string{"Appender"})

	spec := client.NewPipeline("grow").
		SeedValue("text", schemas.TypeText, "", "ab").
		Step("grow", "Appender").Input("text", "seed.text").RepeatUntil(`len(output.text) >= 5`, 10).
		Then("more", "Appender").
		MustBuild()
	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, ""), 20*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	if got := meshtest.TextOut(t, r, "grow"); got != "abxxx" {
		t.Errorf("grow = %q, want abxxx (three iterations)", got)
	}
	if s := r.Steps["grow"].Summary; !strings.Contains(s, `"len(output.text) >= 5" held after iteration 3`) {
		t.Errorf("summary %q", s)
	}
	if got := meshtest.TextOut(t, r, "more"); got != "abxxxx" {
		t.Errorf("more = %q", got)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("%d calls, want 4", n)
	}

	spec = client.NewPipeline("bounded").
		SeedValue("text", schemas.TypeText, "", "ab").
		Step("grow", "Appender").Input("text", "seed.text").RepeatUntil(`output.text == "never" && iteration > 0`, 3).
		MustBuild()
	r = meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, ""), 20*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	if got := meshtest.TextOut(t, r, "grow"); got != "abxxx" {
		t.Errorf("grow = %q, want abxxx", got)
	}
	if s := r.Steps["grow"].Summary; !strings.Contains(s, `stopped at max_iterations 3: "output.text == \"never\" && iteration > 0" never held`) {
		t.Errorf("summary %q", s)
	}
}

// TestLoopsInvalidAtSubmit: loop specs that cannot run are refused before
// anything runs, every problem at once.
func TestLoopsInvalidAtSubmit(t *testing.T) {
	m := meshtest.New(t)
	var calls atomic.Int64
	m.Appender(t, &calls)
	o := m.Orchestrator(t, []string{"Appender"})
	spec := client.NewPipeline("bad-loops").
		SeedValue("text", schemas.TypeText, "", "ab").
		Var("n", 3).
		Step("a", "Appender").Input("text", "seed.text").RepeatUntil(`output.text +`, 3).
		Step("c", "Appender").ForEach("vars.nope", 2).
		Step("d", "Appender").ForEach("seed.missing", 2).
		Step("e", "Appender").ForEach("vars.n", 2).
		Step("f", "Appender").ForEach("seed.text", 2).ItemInput("nope").
		MustBuild()
	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, ""), 20*time.Second)
	if r.Status != schemas.RunFailed || r.Code != schemas.CodeInvalidPipeline {
		t.Fatalf("run %s (%s), want failed invalid_pipeline", r.Status, r.Code)
	}
	for _, want := range []string{
		`step "a": repeat.until: bad condition "output.text +"`,
		`step "c": for_each.items: unknown variable "nope"`,
		`step "d" (Appender)`, `seed.missing`,
		`step "e": for_each.items vars.n is a float64, not a list`,
		`step "f": for_each.input "nope" is not an input of agent Appender`,
	} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("error lacks %q:\n%s", want, r.Error)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d calls, want none", n)
	}
	// The shape is checked as the spec is built, before it is sent.
	_, err := client.NewPipeline("shape").
		Step("b", "Appender").RepeatUntil(`output.text == "x"`, 0).
		Step("f", "Appender").ForEach("seed.text", 100).
		Step("g", "Appender").RepeatUntil("", 3).
		Build()
	for _, want := range []string{`step "b": repeat.max_iterations 0`, `step "f": for_each.parallel 100 is over the limit of 64`, `step "g": a repeat needs repeat.until`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("build error lacks %q: %v", want, err)
		}
	}
}
