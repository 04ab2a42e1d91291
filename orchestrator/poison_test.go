package orchestrator_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// nestedText is a pipeline of sub-pipelines nested depth deep around one
// TextAgent step.
func nestedText(depth int) pipelinespec.PipelineSpec {
	spec := client.NewPipeline("leaf").Step("up", text.Name).Param("op", "upper").Input("text", "text:deep").MustBuild()
	for i := range depth {
		inner := spec
		spec = pipelinespec.PipelineSpec{Name: "level-" + strconv.Itoa(depth-i-1), Steps: []pipelinespec.PipelineStep{
			{ID: "p", Kind: pipelinespec.StepKindPipeline, Pipeline: &pipelinespec.SubPipeline{Spec: &inner}}}}
	}
	return spec
}

// finalEvent waits for the io.agentmesh.pipeline.completed event on ch.
func finalEvent(t *testing.T, ch <-chan bus.Event, within time.Duration) schemas.RunEvent {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev := <-ch:
			if ev.Type != bus.TypePipelineCompleted {
				continue
			}
			var re schemas.RunEvent
			if err := json.Unmarshal(ev.Data, &re); err != nil {
				t.Fatal(err)
			}
			return re
		case <-timeout:
			t.Fatalf("no pipeline.completed event within %s", within)
		}
	}
}

// requestsSettled waits until MESH_REQUESTS holds nothing and the
// orchestrator's consumer has nothing pending or unacknowledged.
func requestsSettled(t *testing.T, m *meshtest.Mesh) {
	t.Helper()
	ctx := context.Background()
	fixture.Eventually(t, "MESH_REQUESTS to be empty and acknowledged", func() bool {
		si, err := m.Res.Requests.Info(ctx)
		if err != nil || si.State.Msgs != 0 {
			return false
		}
		c, err := m.Res.Requests.Consumer(ctx, orchestrator.DurableName)
		if err != nil {
			return false
		}
		ci, err := c.Info(ctx)
		return err == nil && ci.NumAckPending == 0 && ci.NumPending == 0
	})
}

// TestDeepPipelineIsAnsweredOnce: sub-pipelines nested 8 deep (the
// documented bound) run; 500 deep (a poison message that took GBs and
// was redelivered forever) gets one failed event with code limit_exceeded
// and an error of bounded size, is acknowledged, and costs the replica
// little memory.
func TestDeepPipelineIsAnsweredOnce(t *testing.T) {
	m := meshtest.New(t)
	m.Run(t, text.New())
	o := m.Orchestrator(t, []string{text.Name})

	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, nestedText(8), ""), 60*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("8 deep: %s %s: %s", r.Status, r.Code, r.Error)
	}

	runID := "deep-500"
	events := m.Events(t, runID)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m.Submit(t, nestedText(500), runID)
	re := finalEvent(t, events, 30*time.Second)
	requestsSettled(t, m)
	runtime.ReadMemStats(&after)
	if re.Status != schemas.RunFailed || re.Code != schemas.CodeLimitExceeded ||
		!strings.Contains(re.Error, "sub-pipeline nesting depth 500 is over the limit of 8") {
		t.Fatalf("500 deep: %s %s: %s", re.Status, re.Code, schemas.Clip(re.Error, 500))
	}
	if len(re.Error) > 2000 {
		t.Errorf("500 deep: error of %d bytes: %s", len(re.Error), schemas.Clip(re.Error, 500))
	}
	// Allocated in all, by everything in the test process meanwhile:
	// the spec is 60 KB; the old validation took gigabytes.
	t.Logf("refusing 500 deep: %d KiB allocated, error of %d bytes", (after.TotalAlloc-before.TotalAlloc)>>10, len(re.Error))
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("refusing 500 deep allocated %d MiB", got>>20)
	}
	select {
	case ev := <-events:
		t.Errorf("a second event: %s %s", ev.Type, ev.Data)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestRequestWhoseOutcomeCannotBeWritten: a submission whose run cannot
// be stored (the runs bucket takes no value that large) fails on each
// delivery; the last one (MaxDeliver) answers it with code internal,
// dead-letters it on mesh.dead.orchestrator with the reason, and
// acknowledges it, where it used to come back forever.
func TestRequestWhoseOutcomeCannotBeWritten(t *testing.T) {
	m := meshtest.New(t)
	m.Run(t, text.New())
	ctx := context.Background()
	js := m.Srv.JetStream(t)
	runs := "KV_" + m.Srv.Names().RunsBucket()
	s, err := js.Stream(ctx, runs)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.MaxMsgSize = 200 // a header fits; the spec does not
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	o := m.Orchestrator(t, []string{text.Name}, orchestrator.WithMaxDeliver(3))

	runID := "unwritable"
	events := m.Events(t, runID)
	spec := client.NewPipeline("unwritable").Step("up", text.Name).Param("op", "upper").
		Input("text", "text:"+strings.Repeat("x", 300)).MustBuild()
	m.Submit(t, spec, runID)
	re := finalEvent(t, events, 30*time.Second)
	if re.Status != schemas.RunFailed || re.Code != schemas.CodeInternal || !strings.Contains(re.Error, "gave up after 3 deliveries") {
		t.Fatalf("answer: %s %s: %s", re.Status, re.Code, re.Error)
	}
	requestsSettled(t, m)
	dl := lastDead(t, m, orchestrator.DurableName, 1)
	if reason := dl.Header.Get(bus.HeaderDeadReason); !strings.Contains(reason, "internal: gave up after 3 deliveries") {
		t.Errorf("dead letter reason %q", reason)
	}
	if ev, err := bus.Decode(&nats.Msg{Subject: dl.Subject, Header: dl.Header, Data: dl.Data}); err != nil || ev.Ext(bus.ExtRunID) != runID {
		t.Errorf("dead letter: %v, run %q", err, ev.Ext(bus.ExtRunID))
	}
	if _, err := o.Store().Run(ctx, runID); err == nil {
		t.Errorf("run %s was stored", runID)
	}
}

// TestLimitsOfTheOrchestrator: the limits given with WithLimits hold at
// submit (a list variable of 6 items over a limit of 5) and when a
// for_each starts (a seed of 6 lines): both fail with limit_exceeded
// naming the value and the limit; 5 items run.
func TestLimitsOfTheOrchestrator(t *testing.T) {
	m := meshtest.New(t)
	m.Run(t, text.New())
	o := m.Orchestrator(t, []string{text.Name}, orchestrator.WithLimits(pipelinespec.Limits{ForEachItems: 5}))
	lines := func(n int) string {
		l := make([]string, n)
		for i := range l {
			l[i] = "line " + strconv.Itoa(i)
		}
		return strings.Join(l, "\n")
	}
	bySeed := func(n int) pipelinespec.PipelineSpec {
		return client.NewPipeline("each-line").SeedValue("lines", schemas.TypeText, "", lines(n)).
			Step("up", text.Name).Param("op", "upper").ForEach("seed.lines", 2).MustBuild()
	}
	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, bySeed(5), ""), 30*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("5 items: %s %s", r.Status, r.Error)
	}
	r = meshtest.WaitRun(t, o.Store(), m.Submit(t, bySeed(6), ""), 30*time.Second)
	if st := r.Steps["up"]; r.Status != schemas.RunFailed || st.Code != schemas.CodeLimitExceeded || !strings.Contains(st.Error, "6 is over the limit of 5") {
		t.Fatalf("6 items by seed: run %s, step %+v", r.Status, st)
	}
	byVar := bySeed(1)
	byVar.Vars = map[string]any{"items": []any{"a", "b", "c", "d", "e", "f"}}
	byVar.Steps[0].ForEach.Items = "vars.items"
	r = meshtest.WaitRun(t, o.Store(), m.Submit(t, byVar, ""), 30*time.Second)
	if r.Status != schemas.RunFailed || r.Code != schemas.CodeLimitExceeded || !strings.Contains(r.Error, "6 is over the limit of 5") {
		t.Fatalf("6 items by variable: %s %s: %s; want it refused at submit", r.Status, r.Code, r.Error)
	}
}
