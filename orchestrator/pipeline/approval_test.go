package pipeline_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// echoAgent is an agent that answers its TEXT input "text" as its summary,
// and counts its runs.
func echoAgent(t *testing.T, m *meshtest.Mesh, runs *fixture.Counter) {
	m.Agent(t, schemas.AgentContract{Name: "Echo", Capability: schemas.CapTransformation, Description: "echoes its text",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText}},
		Outputs: []schemas.TypedOutput{{Name: "echo", DataType: schemas.TypeText, ContentTypeHint: "echo"}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			runs.Add("Echo")
			text, _ := ec.Text("text")
			return fixture.OK("Echo", "echo: "+text, nil), nil
		}, 4)
}

// waitFor returns the first event of one of types (for step, when given).
func waitFor(t *testing.T, events <-chan bus.Event, step string, types ...string) bus.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			for _, typ := range types {
				if ev.Type == typ && (step == "" || ev.Ext(bus.ExtStepID) == step) {
					return ev
				}
			}
		case <-timeout:
			t.Fatalf("no %v event for step %q within 10s", types, step)
		}
	}
}

func resolve(t *testing.T, m *meshtest.Mesh, r pipelinespec.Resolution) string {
	t.Helper()
	id, err := client.ResolveStep(context.Background(), m.Srv.JetStream(t), m.Srv.Names(), r, "test")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// An approval step waits, listed in the run's header as waiting and what
// for; approved, it completes and its dependant runs; a second answer is
// refused with not_waiting.
func TestApprovalApproved(t *testing.T) {
	m := meshtest.New(t)
	var runs fixture.Counter
	echoAgent(t, m, &runs)
	o := m.Orchestrator(t, []string{"Echo"}, orchestrator.WithSweepInterval(100*time.Millisecond))
	spec := client.NewPipeline("approve").
		Approval("ok", "Publish it?", time.Minute, "").
		Step("publish", "Echo").After("ok").Input("text", "text:published").
		MustBuild()
	events := m.Events(t, "appr")
	m.Submit(t, spec, "appr")
	ev := waitFor(t, events, "ok", bus.TypeStepWaiting)
	if err := schemas.ValidateJSON(schemas.SchemaStepEvent, ev.Data); err != nil {
		t.Errorf("waiting event: %v", err)
	}
	r, err := o.Store().Run(context.Background(), "appr")
	if err != nil {
		t.Fatal(err)
	}
	if st := r.Steps["ok"]; st.Status != schemas.StepWaiting || st.Reason != "approval: Publish it?" {
		t.Errorf("step ok: %s %q, want waiting for the approval", st.Status, st.Reason)
	}
	if n := runs.Snapshot()["Echo"]; n != 0 {
		t.Errorf("the dependant ran %d times before the approval", n)
	}
	resolve(t, m, pipelinespec.Resolution{RunID: "appr", Step: "ok", Decision: pipelinespec.DecisionApprove, Comment: "ship it", By: "ann"})
	done := meshtest.WaitRun(t, o.Store(), "appr", 10*time.Second)
	if done.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", done.Status, done.Error)
	}
	if got := done.Steps["ok"].Summary; got != "approved by ann: ship it" {
		t.Errorf("approval summary %q", got)
	}
	if done.Steps["publish"].Summary != "echo: published" {
		t.Errorf("dependant: %+v", done.Steps["publish"])
	}
	again := resolve(t, m, pipelinespec.Resolution{RunID: "appr", Step: "ok", Decision: pipelinespec.DecisionReject})
	refusal(t, events, again, schemas.CodeNotWaiting, "the run has ended")
}

// refusal waits for the refusal of request id and checks its code.
func refusal(t *testing.T, events <-chan bus.Event, id, code, says string) {
	t.Helper()
	for {
		ev := waitFor(t, events, "", bus.TypeResolveRefused)
		if err := schemas.ValidateJSON(schemas.SchemaResolveRefusal, ev.Data); err != nil {
			t.Errorf("refusal event: %v", err)
		}
		var rr pipelinespec.ResolveRefusal
		if err := ev.DataAs(&rr); err != nil {
			t.Fatal(err)
		}
		if rr.Request != id {
			continue
		}
		if rr.Code != code || !strings.Contains(rr.Error, says) {
			t.Errorf("refusal %s %q, want %s saying %q", rr.Code, rr.Error, code, says)
		}
		return
	}
}

// Rejected, an approval step fails with code rejected, its dependants are
// skipped and the run fails.
func TestApprovalRejected(t *testing.T) {
	m := meshtest.New(t)
	var runs fixture.Counter
	echoAgent(t, m, &runs)
	o := m.Orchestrator(t, []string{"Echo"})
	spec := client.NewPipeline("reject").
		Approval("ok", "Delete everything?", time.Minute, pipelinespec.DecisionApprove).
		Step("delete", "Echo").After("ok").Input("text", "text:deleted").
		MustBuild()
	events := m.Events(t, "rej")
	m.Submit(t, spec, "rej")
	waitFor(t, events, "ok", bus.TypeStepWaiting)
	resolve(t, m, pipelinespec.Resolution{RunID: "rej", Step: "ok", Decision: pipelinespec.DecisionReject, Comment: "no", By: "bob"})
	done := meshtest.WaitRun(t, o.Store(), "rej", 10*time.Second)
	if done.Status != schemas.RunFailed || done.Steps["ok"].Code != schemas.CodeRejected || done.Steps["ok"].Error != "rejected by bob: no" {
		t.Errorf("run %s, step ok %+v", done.Status, done.Steps["ok"])
	}
	if st := done.Steps["delete"]; st.Status != schemas.StepSkipped {
		t.Errorf("dependant %s, want skipped", st.Status)
	}
	if n := runs.Snapshot()["Echo"]; n != 0 {
		t.Errorf("the dependant of a rejected approval ran %d times", n)
	}
}

// Nobody answers: at the timeout the sweep applies the default, approve
// here, and the run goes on; an input with no answer takes its default value.
func TestHumanTimeoutTakesDefault(t *testing.T) {
	m := meshtest.New(t)
	var runs fixture.Counter
	echoAgent(t, m, &runs)
	o := m.Orchestrator(t, []string{"Echo"}, orchestrator.WithSweepInterval(50*time.Millisecond), orchestrator.WithTimeoutGrace(10*time.Millisecond))
	spec := client.NewPipeline("timeout").
		Approval("ok", "Go on?", 300*time.Millisecond, pipelinespec.DecisionApprove).
		HumanInput("title", "Title?", "", 300*time.Millisecond, "untitled").
		Step("use", "Echo").After("ok", "title").
		MustBuild()
	m.Submit(t, spec, "tmo")
	done := meshtest.WaitRun(t, o.Store(), "tmo", 10*time.Second)
	if done.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", done.Status, done.Error)
	}
	if got := done.Steps["ok"].Summary; !strings.HasPrefix(got, "approved by default (no answer within 300ms)") {
		t.Errorf("approval summary %q", got)
	}
	if got := done.Steps["use"].Summary; got != "echo: untitled" {
		t.Errorf("the dependant read %q, want the input's default", got)
	}
	// An approval with no default rejects at its timeout.
	spec = client.NewPipeline("timeout-reject").Approval("ok", "Go on?", 200*time.Millisecond, "").MustBuild()
	m.Submit(t, spec, "tmo2")
	done = meshtest.WaitRun(t, o.Store(), "tmo2", 10*time.Second)
	if done.Status != schemas.RunFailed || done.Steps["ok"].Code != schemas.CodeRejected {
		t.Errorf("run %s, step %+v", done.Status, done.Steps["ok"])
	}
}

// An input step's value is checked against its data type: a bad one is
// refused with invalid_input and the step keeps waiting; a good one is the
// step's typed output, which the dependant reads.
func TestInputTypedValue(t *testing.T) {
	m := meshtest.New(t)
	var runs fixture.Counter
	echoAgent(t, m, &runs)
	o := m.Orchestrator(t, []string{"Echo"})
	spec := client.NewPipeline("input").
		HumanInput("when", "Sort them how?", schemas.TypeCategorization, time.Minute, nil).
		HumanInput("text", "Say something", "", time.Minute, nil).
		Step("say", "Echo").After("when", "text").
		MustBuild()
	events := m.Events(t, "inp")
	m.Submit(t, spec, "inp")
	waitFor(t, events, "when", bus.TypeStepWaiting)
	bad := resolve(t, m, pipelinespec.Resolution{RunID: "inp", Step: "when", Value: 42})
	refusal(t, events, bad, schemas.CodeInvalidInput, schemas.TypeCategorization)
	wrongKind := resolve(t, m, pipelinespec.Resolution{RunID: "inp", Step: "when", Decision: pipelinespec.DecisionApprove})
	refusal(t, events, wrongKind, schemas.CodeInvalidInput, "is an input")
	noStep := resolve(t, m, pipelinespec.Resolution{RunID: "inp", Step: "say", Value: "x"})
	refusal(t, events, noStep, schemas.CodeNotWaiting, "no approval or input step")
	nope := m.Events(t, "nope")
	noRun := resolve(t, m, pipelinespec.Resolution{RunID: "nope", Step: "when", Value: "x"})
	refusal(t, nope, noRun, schemas.CodeNotWaiting, `no run "nope"`)

	resolve(t, m, pipelinespec.Resolution{RunID: "inp", Step: "when", Value: map[string]any{"categories": map[string]any{"cats": []string{"f1"}}}})
	resolve(t, m, pipelinespec.Resolution{RunID: "inp", Step: "text", Value: "hello"})
	done := meshtest.WaitRun(t, o.Store(), "inp", 10*time.Second)
	if done.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", done.Status, done.Error)
	}
	v := done.Steps["when"].Outputs[pipelinespec.HumanOutput]
	if v.DataType != schemas.TypeCategorization || string(v.Value) != `{"categories":{"cats":["f1"]}}` {
		t.Errorf("input output %s %s", v.DataType, v.Value)
	}
	if got := done.Steps["say"].Summary; got != "echo: hello" {
		t.Errorf("dependant read %q", got)
	}
}

// A spec whose input default fails its type is refused before anything runs.
func TestInputDefaultCheckedAtSubmit(t *testing.T) {
	m := meshtest.New(t)
	o := m.Orchestrator(t, nil)
	spec := client.NewPipeline("bad-default").HumanInput("n", "Categories", schemas.TypeCategorization, time.Minute, 7).MustBuild()
	m.Submit(t, spec, "bad")
	done := meshtest.WaitRun(t, o.Store(), "bad", 10*time.Second)
	if done.Code != schemas.CodeInvalidPipeline || !strings.Contains(done.Error, `step "n": human.default`) {
		t.Errorf("run %s %s: %s", done.Status, done.Code, done.Error)
	}
}
