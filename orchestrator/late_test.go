package orchestrator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/schemas"
)

// drained waits until the shared results consumer has handled every result.
func drained(t testing.TB, m *mesh) {
	t.Helper()
	js := m.srv.JetStream(t)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := js.Consumer(context.Background(), m.srv.Names().ResultsStream(), orchestrator.DurableName)
		if err == nil {
			info, err := c.Info(context.Background())
			if err == nil && info.NumPending == 0 && info.NumAckPending == 0 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("results consumer did not drain")
}

func pollUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLateResultAfterTimeoutChangesNothing(t *testing.T) {
	m := newMesh(t)
	release := make(chan struct{})
	defer close(release)
	searchAgent(t, m, nil)
	m.agent(t, schemas.AgentContract{Name: "SlowAgent", Capability: schemas.CapTransformation, Description: "slow",
		Inputs:  []schemas.TypedInput{filesIn("images", schemas.ContentImages, true)},
		Outputs: []schemas.TypedOutput{filesOut("images", schemas.ContentImages, true)}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			<-release // ignores its deadline, like a stuck agent
			return ok("SlowAgent", "late", map[string]schemas.TypedValue{"images": files(schemas.ContentImages, "late-1")}), nil
		}, 1)
	analysisAgent(t, m)
	o := m.orchestrator(t, []string{"ImageSearchAgent", "SlowAgent", "AnalysisAgent"},
		orchestrator.WithTimeoutGrace(0), orchestrator.WithSweepInterval(100*time.Millisecond))

	spec := orchestrator.NewPipeline("late").
		Step("search", "ImageSearchAgent").Param("query", "q").
		Then("slow", "SlowAgent").Timeout(300*time.Millisecond).
		Then("after", "AnalysisAgent").
		Step("side", "AnalysisAgent").After("search").
		MustBuild()
	id := m.submit(t, spec, "late")
	run := waitRun(t, o.Store(), id, 10*time.Second)
	slow := run.Steps["slow"]
	if run.Status != orchestrator.RunFailed || slow.Status != orchestrator.StepFailed || !strings.Contains(slow.Error, "timeout") {
		t.Fatalf("run %s, slow %+v", run.Status, slow)
	}
	if st := run.Steps["after"]; st.Status != orchestrator.StepSkipped || !strings.Contains(st.Reason, `dependency "slow" failed`) {
		t.Errorf("dependant: %+v, want skipped naming slow", st)
	}
	if st := run.Steps["side"]; st.Status != orchestrator.StepCompleted {
		t.Errorf("independent branch: %+v, want completed", st)
	}
	drained(t, m)
	before := runKeys(t, m, id)
	if _, ok := before[id+".step.slow"]; !ok {
		t.Fatalf("no record of the timed-out step among %v", before)
	}

	// The late reply: a successful result for the timed-out task.
	late := ok("SlowAgent", "late", map[string]schemas.TypedValue{"images": files(schemas.ContentImages, "late-1")})
	ev, _ := bus.NewEvent(bus.TypeTaskCompleted, "test", late)
	ev.SetExt(bus.ExtTaskID, slow.TaskID)
	ev.SetExt(bus.ExtRunID, id)
	ev.SetExt(bus.ExtStepID, "slow")
	msg, _ := bus.Encode(m.srv.Names().OrchestratorResult(id), ev)
	if _, err := m.srv.JetStream(t).PublishMsg(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	release <- struct{}{} // and the stuck agent's own, later still
	pollUntil(t, "the stuck agent's late result", func() bool {
		last, err := m.res.Results.GetLastMsgForSubject(context.Background(), m.srv.Names().OrchestratorResult(id))
		return err == nil && last.Header.Get("ce-source") != "test"
	})
	drained(t, m)
	after := runKeys(t, m, id)
	if len(after) != len(before) {
		t.Errorf("a late result changed the run's keys: %v -> %v", before, after)
	}
	for k, rev := range before {
		if after[k] != rev {
			t.Errorf("a late result changed %s: revision %d -> %d", k, rev, after[k])
		}
	}
	if run := waitRun(t, o.Store(), id, time.Second); run.Steps["slow"].Status != orchestrator.StepFailed {
		t.Errorf("slow step after the late result: %+v", run.Steps["slow"])
	}
}

// runKeys returns the revision of every key of a run in the runs bucket.
func runKeys(t testing.TB, m *mesh, id string) map[string]uint64 {
	t.Helper()
	ctx := context.Background()
	lister, err := m.res.Runs.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lister.Stop() }()
	out := map[string]uint64{}
	for k := range lister.Keys() {
		if k != id && !strings.HasPrefix(k, id+".") {
			continue
		}
		e, err := m.res.Runs.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = e.Revision()
	}
	return out
}

// A result that comes in before the header that starts its step's wave is
// stored (its task went out ahead of that header) is handed back and
// applied once the wave starts, not dropped as a late one.
func TestEarlyResultIsAppliedOnceItsWaveStarts(t *testing.T) {
	m := newMesh(t)
	releaseA, stop := make(chan struct{}), make(chan struct{})
	defer close(stop)
	m.agent(t, schemas.AgentContract{Name: "AgentA", Capability: schemas.CapTransformation, Description: "a"},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			<-releaseA
			return ok("AgentA", "a done", nil), nil
		}, 1)
	m.agent(t, schemas.AgentContract{Name: "AgentB", Capability: schemas.CapTransformation, Description: "b"},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			<-stop // never answers: b can only end by the early result
			return ok("AgentB", "from the agent", nil), nil
		}, 1)
	o := m.orchestrator(t, []string{"AgentA", "AgentB"})
	spec := orchestrator.NewPipeline("early").
		Step("a", "AgentA").Then("b", "AgentB").Timeout(30 * time.Second).MustBuild()
	id := m.submit(t, spec, "early")
	pollUntil(t, "a running", func() bool {
		run, err := o.Store().Run(context.Background(), id)
		return err == nil && run.Steps["a"].Status == orchestrator.StepRunning
	})

	res := ok("AgentB", "early", nil)
	ev, _ := bus.NewEvent(bus.TypeTaskCompleted, "test", res)
	ev.SetExt(bus.ExtTaskID, orchestrator.TaskID(id, "b", 1))
	ev.SetExt(bus.ExtRunID, id)
	ev.SetExt(bus.ExtStepID, "b")
	msg, _ := bus.Encode(m.srv.Names().OrchestratorResult(id), ev)
	if _, err := m.srv.JetStream(t).PublishMsg(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // handed back a few times
	close(releaseA)

	run := waitRun(t, o.Store(), id, 10*time.Second)
	if run.Status != orchestrator.RunCompleted || run.Steps["b"].Summary != "early" {
		t.Fatalf("run %s, b %+v: want completed by the early result", run.Status, run.Steps["b"])
	}
}
