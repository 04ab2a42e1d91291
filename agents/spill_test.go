package agents_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestLargeCollectionFlowsBetweenAgents: one agent produces 100,000 image
// IDs, far over NATS's payload limit; the runtime spills them to the object
// store, the result carries only a collection_ref, and a second agent fed
// that value through the bus sees all 100,000 IDs in order.
func TestLargeCollectionFlowsBetweenAgents(t *testing.T) {
	m := newMesh(t)
	spill := agents.WithValueResolver(resolvers.NewCollections(m.res.Files, 0))
	const n = 100000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("f-%020d", i)
	}
	m.serve(t, agents.Func(schemas.AgentContract{
		Name: "Producer", Capability: schemas.CapSearch, Description: "finds very many images",
		Outputs: []schemas.TypedOutput{{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages}},
	}, func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
		return schemas.AgentResult{Success: true, Outputs: map[string]schemas.TypedValue{
			"images": schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, ids...), "Producer"),
		}}, nil
	}), spill)
	seen := make(chan []string, 1)
	m.serve(t, agents.Func(schemas.AgentContract{
		Name: "Consumer", Capability: schemas.CapAnalysis, Description: "looks at every image",
		Inputs: []schemas.TypedInput{{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages, Required: true}},
	}, func(_ context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		fc, err := ec.Files("images")
		if err != nil {
			return schemas.AgentResult{}, err
		}
		seen <- fc.IDs()
		return schemas.AgentResult{Success: true, Summary: fmt.Sprintf("saw %d", fc.Count())}, nil
	}), spill)

	produced := m.call(t, "Producer", task(t, schemas.TaskRequest{}))
	if !produced.Result.Success {
		t.Fatalf("producer failed: %+v", produced.Result.Error)
	}
	out := produced.Result.Outputs["images"]
	fc, err := out.Files()
	if err != nil {
		t.Fatal(err)
	}
	if !fc.Spilled() || fc.Count() != n {
		t.Fatalf("the result carries %d IDs inline (spilled %v, count %d); want a collection_ref to %d", len(fc.IDs()), fc.Spilled(), fc.Count(), n)
	}

	consumed := m.call(t, "Consumer", task(t, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"images": out}}))
	if !consumed.Result.Success {
		t.Fatalf("consumer failed: %+v", consumed.Result.Error)
	}
	got := <-seen
	if len(got) != n {
		t.Fatalf("consumer saw %d IDs, want %d", len(got), n)
	}
	for i := range got {
		if got[i] != ids[i] {
			t.Fatalf("ID %d is %q, want %q: order not kept", i, got[i], ids[i])
		}
	}
}
