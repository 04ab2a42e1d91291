package pipeline_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// A step whose task MESH_TASKS refuses (full: an operator's MaxMsgs) fails
// at once with backlog_full, naming the stream and its limit, and the run
// ends failed with it, long before the step's timeout.
func TestStepIntoFullTasksStreamFailsBacklogFull(t *testing.T) {
	m := meshtest.New(t)
	m.Stuck(t, "Stuck", 3)
	o := m.Orchestrator(t, []string{"Stuck"})
	spec := pipelinespec.PipelineSpec{Name: "full", Steps: []pipelinespec.PipelineStep{{ID: "a", Agent: "Stuck",
		Inputs: map[string]string{"text": "text:hello"}, TimeoutMS: (10 * time.Minute).Milliseconds()}}}
	id := m.Submit(t, spec, "full-1")
	run := meshtest.WaitRun(t, o.Store(), id, 30*time.Second)
	if run.Status != schemas.RunFailed {
		t.Fatalf("run %s, want failed", run.Status)
	}
	st := run.Steps["a"]
	if st == nil || st.Code != schemas.CodeBacklogFull {
		t.Fatalf("step a: %+v, want code %s", st, schemas.CodeBacklogFull)
	}
	for _, want := range []string{m.Srv.Names().TasksStream(), "MaxMsgs 3"} {
		if !strings.Contains(st.Error, want) {
			t.Errorf("step error %q does not name %q", st.Error, want)
		}
	}
	if !strings.Contains(run.Error, schemas.CodeBacklogFull) {
		t.Errorf("run error %q does not say %s", run.Error, schemas.CodeBacklogFull)
	}
}

// A for_each whose items' tasks MESH_TASKS refuses (full) fails its first
// refused item with backlog_full, and so the step and the run, long
// before the step's timeout.
func TestForEachIntoFullTasksStreamFailsBacklogFull(t *testing.T) {
	m := meshtest.New(t)
	m.Stuck(t, "Stuck", 3)
	o := m.Orchestrator(t, []string{"Stuck"})
	spec := client.NewPipeline("full-each").
		Var("texts", []any{"a", "b", "c"}).
		Step("each", "Stuck").ForEach("vars.texts", 2).ItemInput("text").Timeout(10 * time.Minute).
		MustBuild()
	run := meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, "full-each-1"), 30*time.Second)
	st := run.Steps["each"]
	if run.Status != schemas.RunFailed || st == nil || st.Code != schemas.CodeBacklogFull || !strings.Contains(st.Error, "MaxMsgs 3") {
		t.Fatalf("run %s (%s %s), step %+v: want failed with %s naming MaxMsgs 3", run.Status, run.Code, run.Error, st, schemas.CodeBacklogFull)
	}
}
