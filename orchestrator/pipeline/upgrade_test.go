package pipeline

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// A run under way when the orchestrator is upgraded, stored by the previous
// layout (a header listing the wave's ended steps and the run's failures and
// skips by step, a state with history and applied task ids), goes on: its
// next result upgrades the header, and the run ends with the counts, error
// and slots it would have had.
func TestRunOfThePreviousLayoutGoesOn(t *testing.T) {
	_, o := replica(t)
	ctx := context.Background()
	x := schemas.AgentContract{Name: "X", Capability: schemas.CapTransformation, Description: "x",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}}
	spec := pipelinespec.PipelineSpec{Name: "old", Steps: []pipelinespec.PipelineStep{
		{ID: "a1", Agent: "X"}, {ID: "a2", Agent: "X"},
		{ID: "b", Agent: "X", DependsOn: []string{"a1"}}, {ID: "d", Agent: "X", DependsOn: []string{"a2"}},
		{ID: "c", Agent: "X", DependsOn: []string{"b"}},
	}}
	const id = "legacy1"
	now := time.Now().UTC()
	sd := (&state.RunSpec{ID: id, Spec: spec, Contracts: map[string]schemas.AgentContract{"X": x},
		Waves: [][]string{{"a1", "a2"}, {"b", "d"}, {"c"}}, CreatedAt: now}).Init()
	text := func(s string) schemas.AgentResult {
		return schemas.AgentResult{Success: true, Agent: "X", Summary: s, Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue(s, "X")}}
	}
	h0 := &state.RunHeader{ID: id, Status: schemas.RunRunning, Wave: 0, WaveStartedAt: now}
	a1 := resultRecord(sd, h0, "a1", pipelinespec.StepTaskID(id, "a1", 1, ""), text("from a1"), now)
	a2 := failedRecord(sd, h0, "a2", schemas.CodeAgentError, "boom", now)

	// What the previous layout stored, written as it wrote it.
	kv := o.store.RunsBucket()
	put := func(key string, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
	}
	put(id+".spec", sd)
	put(id+".step.a1", a1)
	put(id+".step.a2", a2)
	put(id+".state", map[string]any{"id": id, "turns": 0,
		"slots":         map[string]any{route.SlotText: a1.Outputs["text"]},
		"history":       []map[string]any{{"kind": "result", "agent": "X", "taskid": a1.TaskID, "text": "from a1"}},
		"applied_tasks": []string{a1.TaskID}})
	put(id, map[string]any{"id": id, "name": "old", "status": schemas.RunRunning, "wave": 1, "wave_started_at": now,
		"wave_ended": []string{"d"}, "failed": map[string]string{"a2": "boom"},
		"skipped": map[string]string{"d": `dependency "a2" failed: boom`}, "created_at": now, "updated_at": now})

	if err := o.ApplyResult(ctx, id, "b", pipelinespec.StepTaskID(id, "b", 1, ""), text("from b")); err != nil {
		t.Fatal(err)
	}
	h, _, err := o.store.Header(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if h.Legacy() || h.Wave != 2 || h.Completed != 2 || h.FailedSteps != 1 || h.SkippedSteps != 1 || h.Ends != 0 {
		t.Fatalf("header after the first result: %+v; want upgraded, in wave 2, 2 completed, 1 failed, 1 skipped", h)
	}
	if err := o.ApplyResult(ctx, id, "c", pipelinespec.StepTaskID(id, "c", 1, ""), text("from c")); err != nil {
		t.Fatal(err)
	}
	run, err := o.store.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != schemas.RunFailed || !strings.Contains(run.Error, `step "a2" (X) failed: boom`) || !strings.Contains(run.Error, `step "d" (X) skipped`) {
		t.Errorf("run %s: %q; want failed naming a2 and d", run.Status, run.Error)
	}
	if d := run.Steps["d"]; d.Status != schemas.StepSkipped || !strings.Contains(d.Reason, `"a2" failed`) {
		t.Errorf("d %+v: want skipped because a2 failed", d)
	}
	var got []string
	for _, e := range run.State.History {
		got = append(got, e.Text)
	}
	if want := []string{"from a1", "from b", "from c"}; !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
	if v := run.State.Slots[route.SlotText]; !strings.Contains(string(v.Value), "from c") {
		t.Errorf("text slot %s, want c's", v.Value)
	}
	sum, _, err := o.store.RecentRuns(ctx, 0)
	if err != nil || len(sum) != 1 || sum[0].Completed != 3 || sum[0].Failed != 1 || sum[0].Skipped != 1 {
		t.Errorf("run summary %+v (%v): want 3 completed, 1 failed, 1 skipped", sum, err)
	}
}

// loadInto fills a record set from this replica's cache and, for the
// records it lacks, from the store in parallel: both write the set (a
// replica died of "concurrent map writes" here; the race detector sees
// it without the lock).
func TestLoadIntoMixesCachedAndStoredRecords(t *testing.T) {
	_, o := replica(t)
	ctx := context.Background()
	var steps []pipelinespec.PipelineStep
	for i := range 40 {
		steps = append(steps, pipelinespec.PipelineStep{ID: "s" + strconv.Itoa(i), Agent: "X"})
	}
	sd := startRunOf(t, o, "mix1", schemas.AgentContract{Name: "X", Capability: schemas.CapTransformation, Description: "x"}, steps...)
	h, _ := o.cache.header(sd.ID)
	rs := newRecordSet(nil)
	for i, st := range steps {
		rec := resultRecord(sd, h, st.ID, pipelinespec.StepTaskID(sd.ID, st.ID, 1, sd.Nonce), schemas.AgentResult{Success: true, Agent: "X"}, time.Now().UTC())
		if _, err := o.store.RecordStep(ctx, sd.ID, rec); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			o.cache.putRecord(sd.ID, rec)
		}
		rs.missing = append(rs.missing, st.ID)
	}
	found, err := o.loadInto(ctx, sd.ID, rs)
	if err != nil || !found || len(rs.m) != len(steps) {
		t.Fatalf("loadInto: found %v, %d of %d records, err %v", found, len(rs.m), len(steps), err)
	}
}

// A watch of the runs that ends under the sweep (the cluster moved) is
// made again: a run started after it ended is still swept.
func TestSweepWatchesRunsAgain(t *testing.T) {
	_, o := replica(t, WithSweep(20*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := o.store.WatchRunSpecs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); o.sweepLoop(ctx, w) }()
	defer func() { cancel(); <-done }()
	_ = w.Stop() // the watch ends
	time.Sleep(100 * time.Millisecond)
	startRun(t, o, "after-watch")
	fixture.Eventually(t, "a run started after the watch of runs ended to be swept", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.active["after-watch"]
	})
}
