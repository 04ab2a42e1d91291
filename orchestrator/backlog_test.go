package orchestrator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/orchestrator/internal/meshtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// stuckAgent runs "Stuck", whose tasks never end before the test does,
// and fills MESH_TASKS, limited to room tasks, with tasks for it: the
// stream refuses the next one (an operator's MaxMsgs reached while the
// agent is behind).
func stuckAgent(t *testing.T, m *meshtest.Mesh, room int64) {
	t.Helper()
	release := make(chan struct{})
	m.Agent(t, schemas.AgentContract{Name: "Stuck", Capability: schemas.CapTransformation, Description: "never finishes in time",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText}},
		Outputs: []schemas.TypedOutput{{Name: "out", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return meshtest.OK("Stuck", "late", nil), nil
		}, 1)
	t.Cleanup(func() { close(release) }) // before the agent stops: it drains its tasks
	names := m.Srv.Names()
	m.Srv.LimitStream(t, names.TasksStream(), room)
	d := client.NewDispatcher(m.Srv.JetStream(t), names, "test")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range room {
		task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("fill", "test")}}
		if _, err := d.Dispatch(ctx, "Stuck", task, client.DispatchMeta{TaskID: fmt.Sprint("filler-", i)}); err != nil {
			t.Fatalf("filling MESH_TASKS: %v", err)
		}
	}
}

// A step whose task MESH_TASKS refuses (full: an operator's MaxMsgs) fails
// at once with backlog_full, naming the stream and its limit, and the run
// ends failed with it, long before the step's timeout.
func TestStepIntoFullTasksStreamFailsBacklogFull(t *testing.T) {
	m := meshtest.New(t)
	stuckAgent(t, m, 3)
	o := m.Orchestrator(t, []string{"Stuck"})
	spec := schemas.PipelineSpec{Name: "full", Steps: []schemas.PipelineStep{{ID: "a", Agent: "Stuck",
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
