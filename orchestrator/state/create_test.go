package state_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// A submission handled by two replicas (redelivered while the first one
// was cut off) whose first try stored the run's spec and stopped before
// its header: the second try finishes the run from the stored spec, whose
// nonce names the run's tasks, not from its own; another submission under
// the same run id is refused.
func TestCreateRunFinishedHalfWayKeepsTheStoredSpec(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	store := state.New(res.Conversations, res.Runs)
	ctx := context.Background()
	spec := pipelinespec.PipelineSpec{Name: "p", Steps: []pipelinespec.PipelineStep{{ID: "upper", Agent: "TextAgent"}}}
	first := &state.RunSpec{ID: "run-half", Spec: spec, Waves: [][]string{{"upper"}}, Submission: "ev-1", Nonce: "first"}
	b, _ := json.Marshal(first)
	if _, err := res.Runs.Create(ctx, "run-half.spec", b); err != nil {
		t.Fatal(err)
	}
	other := (&state.RunSpec{ID: "run-half", Spec: spec, Waves: [][]string{{"upper"}}, Submission: "ev-2", Nonce: "other"}).Init()
	if _, err := store.CreateRun(ctx, other, &state.RunHeader{ID: "run-half", Status: schemas.RunRunning}, schemas.NewConversationState("run-half")); !errors.Is(err, state.ErrExists) {
		t.Fatalf("another submission under the run's id: %v, want ErrExists", err)
	}
	again := (&state.RunSpec{ID: "run-half", Spec: spec, Waves: [][]string{{"upper"}}, Submission: "ev-1", Nonce: "second"}).Init()
	if _, err := store.CreateRun(ctx, again, &state.RunHeader{ID: "run-half", Status: schemas.RunRunning}, schemas.NewConversationState("run-half")); err != nil {
		t.Fatalf("the same submission again: %v", err)
	}
	if again.Nonce != "first" {
		t.Fatalf("the run was finished with nonce %q, want the stored spec's %q: its tasks would carry ids its spec does not know", again.Nonce, "first")
	}
	if !again.Has("upper") {
		t.Fatal("the spec taken over is not ready to use (Init)")
	}
}
