package pipeline_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/pipelinespec"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/schemas"
)

// drained waits until the shared results consumer has handled every result.
func drained(t testing.TB, m *meshtest.Mesh) {
	t.Helper()
	js := m.Srv.JetStream(t)
	fixture.Eventually(t, "the results consumer to drain", func() bool {
		c, err := js.Consumer(context.Background(), m.Srv.Names().ResultsStream(), orchestrator.DurableName)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
}

func TestLateResultAfterTimeoutChangesNothing(t *testing.T) {
	m := meshtest.New(t)
	release := make(chan struct{})
	defer close(release)
	m.SearchAgent(t, nil)
	m.Agent(t, schemas.AgentContract{Name: "SlowAgent", Capability: schemas.CapTransformation, Description: "slow",
		Inputs:  []schemas.TypedInput{fixture.FilesIn("images", schemas.ContentImages, true)},
		Outputs: []schemas.TypedOutput{fixture.FilesOut("images", schemas.ContentImages, true)}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			<-release // ignores its deadline, like a stuck agent
			return fixture.OK("SlowAgent", "late", map[string]schemas.TypedValue{"images": fixture.Files(schemas.ContentImages, "late-1")}), nil
		}, 1)
	m.AnalysisAgent(t)
	o := m.Orchestrator(t, []string{"ImageSearchAgent", "SlowAgent", "AnalysisAgent"},
		orchestrator.WithTimeoutGrace(0), orchestrator.WithSweepInterval(100*time.Millisecond))

	spec := client.NewPipeline("late").
		Step("search", "ImageSearchAgent").Param("query", "q").
		Then("slow", "SlowAgent").Timeout(300*time.Millisecond).
		Then("after", "AnalysisAgent").
		Step("side", "AnalysisAgent").After("search").
		MustBuild()
	id := m.Submit(t, spec, "late")
	run := meshtest.WaitRun(t, o.Store(), id, 10*time.Second)
	slow := run.Steps["slow"]
	if run.Status != schemas.RunFailed || slow.Status != schemas.StepFailed || !strings.Contains(slow.Error, "timeout") {
		t.Fatalf("run %s, slow %+v", run.Status, slow)
	}
	if st := run.Steps["after"]; st.Status != schemas.StepSkipped || !strings.Contains(st.Reason, `dependency "slow" failed`) {
		t.Errorf("dependant: %+v, want skipped naming slow", st)
	}
	if st := run.Steps["side"]; st.Status != schemas.StepCompleted {
		t.Errorf("independent branch: %+v, want completed", st)
	}
	drained(t, m)
	before := runKeys(t, m, id)
	if _, ok := before[id+".step.slow"]; !ok {
		t.Fatalf("no record of the timed-out step among %v", before)
	}

	// The late reply: a successful result for the timed-out task.
	late := fixture.OK("SlowAgent", "late", map[string]schemas.TypedValue{"images": fixture.Files(schemas.ContentImages, "late-1")})
	ev, _ := bus.NewEvent(bus.TypeTaskCompleted, "test", late)
	ev.SetExt(bus.ExtTaskID, slow.TaskID)
	ev.SetExt(bus.ExtRunID, id)
	ev.SetExt(bus.ExtStepID, "slow")
	msg, _ := bus.Encode(m.Srv.Names().OrchestratorResult("SlowAgent", id), ev)
	if _, err := m.Srv.JetStream(t).PublishMsg(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	release <- struct{}{} // and the stuck agent's own, later still
	fixture.Eventually(t, "the stuck agent's late result", func() bool {
		last, err := m.Res.Results.GetLastMsgForSubject(context.Background(), m.Srv.Names().OrchestratorResult("SlowAgent", id))
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
	if run := meshtest.WaitRun(t, o.Store(), id, time.Second); run.Steps["slow"].Status != schemas.StepFailed {
		t.Errorf("slow step after the late result: %+v", run.Steps["slow"])
	}
}

// runKeys returns the revision of every key of a run in the runs bucket.
func runKeys(t testing.TB, m *meshtest.Mesh, id string) map[string]uint64 {
	t.Helper()
	ctx := context.Background()
	lister, err := m.Res.Runs.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lister.Stop() }()
	out := map[string]uint64{}
	for k := range lister.Keys() {
		if k != id && !strings.HasPrefix(k, id+".") {
			continue
		}
		e, err := m.Res.Runs.Get(ctx, k)
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
	m := meshtest.New(t)
	releaseA, stop := make(chan struct{}), make(chan struct{})
	defer close(stop)
	m.Agent(t, schemas.AgentContract{Name: "AgentA", Capability: schemas.CapTransformation, Description: "a"},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			<-releaseA
			return fixture.OK("AgentA", "a done", nil), nil
		}, 1)
	m.Agent(t, schemas.AgentContract{Name: "AgentB", Capability: schemas.CapTransformation, Description: "b"},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			<-stop // never answers: b can only end by the early result
			return fixture.OK("AgentB", "from the agent", nil), nil
		}, 1)
	o := m.Orchestrator(t, []string{"AgentA", "AgentB"})
	spec := client.NewPipeline("early").
		Step("a", "AgentA").Then("b", "AgentB").Timeout(30 * time.Second).MustBuild()
	id := m.Submit(t, spec, "early")
	fixture.Eventually(t, "a running", func() bool {
		run, err := o.Store().Run(context.Background(), id)
		return err == nil && run.Steps["a"].Status == schemas.StepRunning
	})

	res := fixture.OK("AgentB", "early", nil)
	ev, _ := bus.NewEvent(bus.TypeTaskCompleted, "test", res)
	ev.SetExt(bus.ExtTaskID, pipelinespec.StepTaskID(id, "b", 1, meshtest.Nonce(t, o, id)))
	ev.SetExt(bus.ExtRunID, id)
	ev.SetExt(bus.ExtStepID, "b")
	msg, _ := bus.Encode(m.Srv.Names().OrchestratorResult("AgentB", id), ev)
	if _, err := m.Srv.JetStream(t).PublishMsg(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	js := m.Srv.JetStream(t)
	fixture.Eventually(t, "the early result handed back", func() bool {
		c, err := js.Consumer(context.Background(), m.Srv.Names().ResultsStream(), orchestrator.DurableName)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.NumRedelivered > 0
	})
	close(releaseA)

	run := meshtest.WaitRun(t, o.Store(), id, 10*time.Second)
	if run.Status != schemas.RunCompleted || run.Steps["b"].Summary != "early" {
		t.Fatalf("run %s, b %+v: want completed by the early result", run.Status, run.Steps["b"])
	}
}

// A result for a run this replica does not find is delivered again, not
// acknowledged at once: a KV read may be answered by any replica, and one
// back from a partition lags, so a run created meanwhile is "not found"
// there for a while. Acknowledged, its result was lost and the run waited
// out its step's timeout (an hour for TextAgent) in the partition test.
func TestResultForARunNotFoundIsDeliveredAgain(t *testing.T) {
	m := meshtest.New(t)
	m.Orchestrator(t, nil)
	js := m.Srv.JetStream(t)
	names := m.Srv.Names()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ev, err := bus.NewEvent(bus.TypeTaskCompleted, "test", schemas.AgentResult{Agent: "Fine", Success: true})
	if err != nil {
		t.Fatal(err)
	}
	ev.SetExt(bus.ExtRunID, "not-seen-yet")
	ev.SetExt(bus.ExtStepID, "s")
	ev.SetExt(bus.ExtTaskID, "not-seen-yet-s-1")
	msg, err := bus.Encode(names.OrchestratorResult("Fine", "not-seen-yet"), ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if !fixture.Until(ctx.Done(), func() bool {
		c, err := js.Consumer(ctx, names.ResultsStream(), orchestrator.DurableName)
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.NumRedelivered > 0
	}) {
		t.Fatal("the result for a run not found was never delivered again: acknowledged and lost")
	}
}
