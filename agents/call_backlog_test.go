package agents_test

import (
	"context"
	"testing"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/schemas"
)

// An agent-to-agent call whose task MESH_TASKS refuses (full) fails at
// once with backlog_full, naming the stream and its limit, and so does
// the caller's task: it is not retried into the same full stream.
func TestCallIntoFullTasksStream(t *testing.T) {
	m := newMesh(t)
	release := make(chan struct{})
	m.serve(t, agents.Func(schemas.AgentContract{
		Name: "Busy", Capability: schemas.CapTransformation, Description: "holds its task until the test ends",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return schemas.AgentResult{Success: true}, nil
	}))
	t.Cleanup(func() { close(release) }) // before Busy stops: it drains its task
	m.srv.LimitStream(t, m.n.TasksStream(), 2)
	m.publish(t, "Busy", task(t, schemas.TaskRequest{Inputs: textIn("fill")}))
	m.serve(t, relay("Caller", "Busy", nil))
	// The caller's task is the stream's second message; its call would be
	// the third.
	r := m.call(t, "Caller", task(t, schemas.TaskRequest{Inputs: textIn("x")}))
	wantFailure(t, r, schemas.CodeBacklogFull, "Caller calling Busy", m.n.TasksStream(), "MaxMsgs 2")
	if r.Result.Metrics.Attempt != 1 {
		t.Errorf("the caller's task failed on delivery %d; want its first", r.Result.Metrics.Attempt)
	}
}
