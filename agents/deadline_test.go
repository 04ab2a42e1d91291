package agents_test

import (
	"context"
	"testing"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// stalledStore is the mesh's object store resolver whose reads do not
// come back until the caller gives up: a store that stalls.
type stalledStore struct {
	schemas.ValueResolver
	reading chan struct{}
}

func (s stalledStore) ResolveValue(ctx context.Context, _ schemas.TypedValue) (schemas.TypedValue, error) {
	close(s.reading)
	<-ctx.Done()
	return schemas.TypedValue{}, ctx.Err()
}

// TestDeadlinePassesWhileInputsAreRead: a task whose deadline passes while
// the runtime reads its inputs from the object store ends with a timeout
// result naming its budget, and its agent never runs.
func TestDeadlinePassesWhileInputsAreRead(t *testing.T) {
	m := newMesh(t)
	store := stalledStore{ValueResolver: resolvers.NewCollections(m.res.Files, 0), reading: make(chan struct{})}
	ran := make(chan struct{}, 1)
	m.serve(t, agents.Func(schemas.AgentContract{
		Name: "Reader", Capability: schemas.CapAnalysis, Description: "reads its text",
		Inputs: []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
	}, func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
		ran <- struct{}{}
		return schemas.AgentResult{Success: true}, nil
	}), agents.WithValueResolver(store))

	r := m.call(t, "Reader", task(t, schemas.TaskRequest{Inputs: textIn("hello"), TimeoutMS: 300}))
	<-store.reading
	wantFailure(t, r, schemas.CodeTimeout, "did not finish within", "timeout_ms 300")
	select {
	case <-ran:
		t.Error("the agent ran after its task's deadline passed while its inputs were read")
	default:
	}
}
