package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// stamper runs agent Stamp, which appends "-<mark>" (its param) to its
// text, counting the tasks it received by mark.
func stamper(t *testing.T, m *meshtest.Mesh, tasks *fixture.Counter) {
	c := schemas.AgentContract{Name: "Stamp", Version: "1.0.0", Capability: schemas.CapTransformation,
		Description: "Appends its mark to its text.",
		Params:      json.RawMessage(`{"type":"object","properties":{"mark":{"type":"string"}},"required":["mark"]}`),
		Inputs:      []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs:     []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}}
	m.Agent(t, c, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		mark := ec.Param("mark")
		tasks.Add(mark)
		s, err := ec.Text("text")
		if err != nil {
			return schemas.AgentResult{}, err
		}
		return fixture.OK("Stamp", "stamped "+mark, map[string]schemas.TypedValue{"text": schemas.TextValue(s+"-"+mark, "Stamp")}), nil
	}, 4)
}

// fiveSteps is s1 -> s2 -> s3 -> s4, and s5 after s2 (in s3's wave, not
// depending on it).
func fiveSteps() pipelinespec.PipelineSpec {
	return client.NewPipeline("stamps").
		SeedValue("text", schemas.TypeText, "", "seed").
		Step("s1", "Stamp").Param("mark", "a").Input("text", "seed.text").
		Then("s2", "Stamp").Param("mark", "b").
		Then("s3", "Stamp").Param("mark", "c").
		Then("s4", "Stamp").Param("mark", "d").
		Step("s5", "Stamp").After("s2").Param("mark", "e").
		MustBuild()
}

// runBytes reads every key of run id in the runs bucket, with its value.
func runBytes(t *testing.T, o *orchestrator.Orchestrator, id string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	kv := o.Store().RunsBucket()
	l, err := kv.ListKeysFiltered(ctx, id, id+".>")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for k := range l.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		out[k] = slices.Clone(e.Value())
	}
	return out
}

func fork(t *testing.T, m *meshtest.Mesh, req schemas.ForkRequest, runID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := client.SubmitFork(ctx, m.Srv.JetStream(t), m.Srv.Names(), req, runID, "test")
	if err != nil {
		t.Fatalf("fork: %v", err)
	}
	return id
}

// TestForkRunsAgainFromAStep forks a finished 5-step run at its third
// step with a changed param: the fork completes with the new param's
// output, no task goes out for the steps it keeps (s1, s2 and s5, which
// does not depend on s3), their records name the original, the fork
// records its origin, and not a byte of the original changes.
func TestForkRunsAgainFromAStep(t *testing.T) {
	m := meshtest.New(t)
	var tasks fixture.Counter
	stamper(t, m, &tasks)
	o := m.Orchestrator(t, []string{"Stamp"})

	orig := meshtest.WaitRun(t, o.Store(), m.Submit(t, fiveSteps(), "orig"), 20*time.Second)
	if orig.Status != schemas.RunCompleted {
		t.Fatalf("original run %s: %s", orig.Status, orig.Error)
	}
	if got := meshtest.TextOut(t, orig, "s4"); got != "seed-a-b-c-d" {
		t.Fatalf("original s4 = %q", got)
	}
	before := runBytes(t, o, "orig")
	want := map[string]int{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1}
	if got := tasks.Snapshot(); !maps.Equal(got, want) {
		t.Fatalf("tasks by mark before the fork: %v, want %v", got, want)
	}

	id := fork(t, m, schemas.ForkRequest{From: "orig", At: "s3", Params: map[string]any{"s3.mark": "C"}}, "forked")
	r := meshtest.WaitRun(t, o.Store(), id, 20*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("fork %s: %s", r.Status, r.Error)
	}
	if got := meshtest.TextOut(t, r, "s4"); got != "seed-a-b-C-d" {
		t.Errorf("fork's s4 = %q, want seed-a-b-C-d", got)
	}
	// Tasks the agent received: s3 (new mark) and s4 once more; none for
	// the kept steps.
	want = map[string]int{"a": 1, "b": 1, "c": 1, "C": 1, "d": 2, "e": 1}
	if got := tasks.Snapshot(); !maps.Equal(got, want) {
		t.Errorf("tasks by mark after the fork: %v, want %v", got, want)
	}
	if r.Origin == nil || *r.Origin != (schemas.RunOrigin{Run: "orig", Step: "s3"}) {
		t.Errorf("fork's origin = %+v, want orig at s3", r.Origin)
	}
	for _, s := range []string{"s1", "s2", "s5"} {
		st := r.Steps[s]
		if st.Status != schemas.StepCompleted || st.From != "orig" || st.TaskID != orig.Steps[s].TaskID {
			t.Errorf("kept step %s = %+v, want completed from orig with its task %s", s, st, orig.Steps[s].TaskID)
		}
	}
	if got := meshtest.TextOut(t, r, "s5"); got != "seed-a-b-e" {
		t.Errorf("kept s5 = %q", got)
	}
	for _, s := range []string{"s3", "s4"} {
		if st := r.Steps[s]; st.From != "" || !strings.HasPrefix(st.TaskID, id+"-") {
			t.Errorf("step %s of the fork = %+v, want run by the fork", s, st)
		}
	}
	if got := r.Spec.Steps[2].Params["mark"]; got != "C" {
		t.Errorf("fork's s3 mark = %v", got)
	}
	after := runBytes(t, o, "orig")
	if len(after) != len(before) {
		t.Errorf("original's keys: %d before the fork, %d after", len(before), len(after))
	}
	for k, b := range before {
		if !bytes.Equal(after[k], b) {
			t.Errorf("original's key %s changed:\n%s\n%s", k, b, after[k])
		}
	}
}

// TestForkRefusesWhatItCannotServe: each request the fork cannot serve
// ends, on the new run's events, with a failed run that names the
// problem, and stores nothing.
func TestForkRefusesWhatItCannotServe(t *testing.T) {
	m := meshtest.New(t)
	var tasks fixture.Counter
	stamper(t, m, &tasks)
	o := m.Orchestrator(t, []string{"Stamp"})
	spec := fiveSteps()
	spec.Vars = map[string]any{"first": "a"}
	spec.Steps[0].Params["mark"] = "${vars.first}"
	meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, "base"), 20*time.Second)

	for i, c := range []struct {
		req        schemas.ForkRequest
		code, want string
	}{
		{schemas.ForkRequest{From: "nope", At: "s1"}, schemas.CodeNotFound, `no run "nope"`},
		{schemas.ForkRequest{From: "base", At: "s9"}, schemas.CodeInvalidPipeline, `no step "s9" (its steps: s1, s2, s3, s4, s5)`},
		{schemas.ForkRequest{From: "base", At: "s3", Params: map[string]any{"s2.mark": "x"}}, schemas.CodeInvalidPipeline, `step "s2" does not depend on "s3"`},
		{schemas.ForkRequest{From: "base", At: "s3", Params: map[string]any{"s7.mark": "x"}}, schemas.CodeInvalidPipeline, `no step "s7"`},
		{schemas.ForkRequest{From: "base", At: "s2", Vars: map[string]any{"first": "z"}}, schemas.CodeInvalidPipeline, `step "s1" reads it`},
		{schemas.ForkRequest{From: "base", At: "s2", Vars: map[string]any{"other": "z"}}, schemas.CodeInvalidPipeline, `declares no such variable`},
	} {
		id := fmt.Sprintf("refused-%d", i)
		events := m.Events(t, id)
		fork(t, m, c.req, id)
		re := waitEnd(t, events)
		if re.Status != schemas.RunFailed || re.Code != c.code || !strings.Contains(re.Error, c.want) {
			t.Errorf("%+v: run end %+v, want failed %s with %q", c.req, re, c.code, c.want)
		}
		if _, err := o.Store().Run(context.Background(), id); err == nil {
			t.Errorf("%+v: run %s was stored", c.req, id)
		}
	}
	// The var may change when every step that reads it runs again.
	r := meshtest.WaitRun(t, o.Store(), fork(t, m, schemas.ForkRequest{From: "base", At: "s1", Vars: map[string]any{"first": "z"}}, ""), 20*time.Second)
	if got := meshtest.TextOut(t, r, "s4"); got != "seed-z-b-c-d" {
		t.Errorf("fork with var first=z: s4 = %q", got)
	}
}

func waitEnd(t *testing.T, events <-chan bus.Event) schemas.RunEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type == bus.TypePipelineCompleted {
				var re schemas.RunEvent
				if err := ev.DataAs(&re); err != nil {
					t.Fatal(err)
				}
				return re
			}
		case <-timeout:
			t.Fatal("no pipeline.completed event")
		}
	}
}
