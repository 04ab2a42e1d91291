package node_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/nodetest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// slotFrequencies is the slot of WORD_FREQUENCIES, the data type the Node
// agent declares in its contract: the orchestrator knows it only from
// there.
const slotFrequencies = "current_word_frequencies"

// testDeclaredDataType runs two parallel steps of the Node agent that each
// produce WORD_FREQUENCIES: the run's slot holds the sum of both (the
// declared merge rule), which passes the declared schema, and a forged
// value that breaks the schema is kept out of the slot with the reason in
// the history.
func testDeclaredDataType(ctx context.Context, t *testing.T, o *orchestrator.Orchestrator, js jetstream.JetStream, names bus.Names, res *bus.Resources, agent *nodetest.Process) {
	files := resolvers.NewObjectStore(res.Files)
	a := store(ctx, t, files, "sea.txt", "the sea the sky")
	b := store(ctx, t, files, "sun.txt", "sun and sea")
	spec := client.NewPipeline("node-frequencies").
		SeedDocuments(a, b).
		Step("left", agentName).
		Step("right", agentName).
		MustBuild()
	runID, err := client.SubmitPipeline(ctx, js, names, spec, "", "examples/node test")
	if err != nil {
		t.Fatal(err)
	}
	run := waitRun(ctx, t, o, runID, agent)
	if run.Status != schemas.RunCompleted {
		t.Fatalf("run %s ended %s: %s\nagent output:\n%s", runID, run.Status, run.Error, agent.Out.String())
	}
	got, ok := run.State.Slots[slotFrequencies]
	if !ok || got.DataType != "WORD_FREQUENCIES" {
		t.Fatalf("slot %s = %+v; slots: %v", slotFrequencies, got, keys(run.State.Slots))
	}
	var freq map[string]int
	if err := json.Unmarshal(got.Value, &freq); err != nil {
		t.Fatal(err)
	}
	// Each step counts both documents; the merge sums the two steps.
	want := map[string]int{"the": 4, "sea": 4, "sky": 2, "sun": 2, "and": 2}
	for w, n := range want {
		if freq[w] != n {
			t.Errorf("%s: %s = %d, want %d (the sum of both steps); slot %s", slotFrequencies, w, freq[w], n, got.Value)
		}
	}
	if len(freq) != len(want) {
		t.Errorf("%s holds %d words, want %d: %s", slotFrequencies, len(freq), len(want), got.Value)
	}
	contract, ok := o.Registry().Lookup(agentName)
	if !ok {
		t.Fatal("the agent left the registry")
	}
	// A router that learns the type from the live contract checks values
	// against the declared schema: the merge passes, a forged count of 0
	// is not routed, and the history says why.
	router := route.NewRouter()
	st := schemas.NewConversationState("forged")
	router.Apply(ctx, st, contract.Contract, "t-ok", schemas.AgentResult{Success: true, Agent: agentName,
		Outputs: map[string]schemas.TypedValue{"frequencies": got}})
	if err := router.DataTypes().Validate("WORD_FREQUENCIES", st.Slots[slotFrequencies].Value); err != nil || len(st.Slots) != 1 {
		t.Fatalf("the run's merged value, routed again: slots %v, %v", keys(st.Slots), err)
	}
	forged := schemas.TypedValue{DataType: "WORD_FREQUENCIES", Value: json.RawMessage(`{"the":0}`)}
	router.Apply(ctx, st, contract.Contract, "t-forged", schemas.AgentResult{Success: true, Agent: agentName,
		Outputs: map[string]schemas.TypedValue{"frequencies": forged}})
	if string(st.Slots[slotFrequencies].Value) != string(got.Value) {
		t.Errorf("a forged value reached the slot: %s", st.Slots[slotFrequencies].Value)
	}
	if h := st.History[len(st.History)-1].Text; !strings.Contains(h, `output "frequencies" not routed`) || !strings.Contains(h, "minimum") {
		t.Errorf("history of the forged value = %q, want the schema's reason", h)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
