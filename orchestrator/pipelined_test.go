package orchestrator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/schemas"
)

// startRun stores a two-step run a -> b on agent X with its first wave in
// progress, as submit would, without dispatching anything.
func startRun(t *testing.T, o *Orchestrator, id string) *runSpec {
	t.Helper()
	contract := schemas.AgentContract{Name: "X", Capability: schemas.CapTransformation, Description: "x"}
	spec := schemas.PipelineSpec{Name: "race", Steps: []schemas.PipelineStep{
		{ID: "a", Agent: "X"}, {ID: "b", Agent: "X", DependsOn: []string{"a"}}}}
	now := time.Now().UTC()
	sd := (&runSpec{ID: id, Spec: spec, Contracts: map[string]schemas.AgentContract{"X": contract},
		Waves: [][]string{{"a"}, {"b"}}, CreatedAt: now}).init()
	var ch runChanges
	h := newHeader(sd, spec.Name, nil, now, &ch)
	rev, err := o.store.createRun(context.Background(), sd, h, schemas.NewConversationState(id))
	if err != nil {
		t.Fatal(err)
	}
	o.cache.putSpec(sd)
	o.cache.putHeader(h, rev)
	return sd
}

// A result whose step record another writer (the sweep's timeout, another
// replica) created first, while the header did not know yet: the record
// and the header are written in one round trip, so the header update goes
// through, and must end up saying what the stored record says.
func TestPipelinedSettleDefersToStoredRecord(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	o, err := New(srv.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	t.Run("different outcome", func(t *testing.T) {
		sd := startRun(t, o, "race1")
		h, _ := o.cache.header("race1")
		timedOut := failedRecord(sd, h, "a", "TIMEOUT: no result by the deadline", time.Now().UTC())
		if _, err := o.store.recordStep(ctx, "race1", timedOut); err != nil {
			t.Fatal(err)
		}
		if err := o.applyRunResult(ctx, "race1", "a", TaskID("race1", "a", 1),
			schemas.AgentResult{Success: true, Agent: "X", Summary: "late"}); err != nil {
			t.Fatal(err)
		}
		run, err := o.store.Run(ctx, "race1")
		if err != nil {
			t.Fatal(err)
		}
		a, b := run.Steps["a"], run.Steps["b"]
		if run.Status != RunFailed || a.Status != StepFailed || !strings.Contains(a.Error, "TIMEOUT") {
			t.Fatalf("run %s, a %+v: want the stored timeout to count", run.Status, a)
		}
		if b.Status != StepSkipped || !strings.Contains(b.Reason, `dependency "a" failed`) {
			t.Errorf("b %+v: want skipped because a failed", b)
		}
		var hd runHeader
		if _, err := o.store.getJSON(ctx, "race1", &hd); err != nil {
			t.Fatal(err)
		}
		if hd.Completed != 0 || hd.Failed["a"] == "" {
			t.Errorf("header completed %d failed %v: want a counted as failed only", hd.Completed, hd.Failed)
		}
	})

	t.Run("same outcome", func(t *testing.T) {
		sd := startRun(t, o, "race2")
		h, _ := o.cache.header("race2")
		res := schemas.AgentResult{Success: true, Agent: "X", Summary: "done"}
		first := resultRecord(sd, h, "a", TaskID("race2", "a", 1), res, time.Now().UTC())
		if _, err := o.store.recordStep(ctx, "race2", first); err != nil {
			t.Fatal(err)
		}
		if err := o.applyRunResult(ctx, "race2", "a", TaskID("race2", "a", 1), res); err != nil {
			t.Fatal(err)
		}
		var hd runHeader
		if _, err := o.store.getJSON(ctx, "race2", &hd); err != nil {
			t.Fatal(err)
		}
		if hd.Completed != 1 || hd.Wave != 1 || len(hd.Failed) != 0 {
			t.Errorf("header %+v: want a completed once and wave 1 started", hd)
		}
		// The duplicate changes nothing.
		if err := o.applyRunResult(ctx, "race2", "a", TaskID("race2", "a", 1), res); err != nil {
			t.Fatal(err)
		}
		var again runHeader
		if _, err := o.store.getJSON(ctx, "race2", &again); err != nil {
			t.Fatal(err)
		}
		if again.Completed != 1 || again.Wave != 1 {
			t.Errorf("after a duplicate: %+v", again)
		}
	})
}
