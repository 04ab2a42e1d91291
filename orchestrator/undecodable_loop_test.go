package orchestrator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestUndecodableItemResultFailsLoopAtOnce: an undecodable result of a
// for_each item or a repeat iteration fails that item, and so the step,
// at once with code malformed_result and the decode error, as an agent
// step's does, instead of the item waiting out the loop's 30 s; the message
// is kept on mesh.dead.<agent>. That holds also when only the task id (not
// the step id) names the item.
func TestUndecodableItemResultFailsLoopAtOnce(t *testing.T) {
	m := meshtest.New(t)
	started := make(chan struct{}, 16)
	release := make(chan struct{})
	defer close(release)
	m.Agent(t, schemas.AgentContract{Name: "StuckText", Capability: schemas.CapTransformation, Description: "never answers by itself",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		stuck(started, release), 8)
	o := m.Orchestrator(t, []string{"StuckText"})
	names := m.Srv.Names()
	js := m.Srv.JetStream(t)

	loops := []struct {
		kind string
		spec func() pipelinespec.PipelineSpec
	}{
		{"for_each", func() pipelinespec.PipelineSpec {
			return client.NewPipeline("undecodable-each").Var("items", []any{"a", "b", "c"}).
				Step("loop", "StuckText").ForEach("vars.items", 1).Timeout(30 * time.Second).MustBuild()
		}},
		{"repeat", func() pipelinespec.PipelineSpec {
			return client.NewPipeline("undecodable-repeat").SeedValue("text", schemas.TypeText, "", "ab").
				Step("loop", "StuckText").Input("text", "seed.text").RepeatUntil(`iteration > 5`, 3).
				Timeout(30 * time.Second).MustBuild()
		}},
	}
	mangles := []struct {
		name    string
		mangle  func(msg *nats.Msg)
		mention string
	}{
		{"data that is not JSON", func(msg *nats.Msg) { msg.Data = []byte("{not json") }, "invalid event data"},
		{"only the taskid to name the item", func(msg *nats.Msg) {
			msg.Header.Del("ce-type")
			msg.Header.Del("ce-stepid")
		}, "type"},
	}
	dead := uint64(0)
	for _, lp := range loops {
		for _, mg := range mangles {
			t.Run(lp.kind+"/"+mg.name, func(t *testing.T) {
				run := m.Submit(t, lp.spec(), "")
				select {
				case <-started:
				case <-time.After(10 * time.Second):
					t.Fatal("the loop's first item never reached the agent")
				}
				taskID := pipelinespec.LoopTaskID(run, "loop", 0, meshtest.Nonce(t, o, run))
				ev, err := bus.NewEvent(bus.TypeTaskCompleted, "test", fixture.OK("StuckText", "fine", nil))
				if err != nil {
					t.Fatal(err)
				}
				ev.SetExt(bus.ExtTaskID, taskID)
				ev.SetExt(bus.ExtRunID, run)
				ev.SetExt(bus.ExtStepID, "loop")
				msg, err := bus.Encode(names.OrchestratorResult("StuckText", run), ev)
				if err != nil {
					t.Fatal(err)
				}
				mg.mangle(msg)
				sent := time.Now()
				if _, err := js.PublishMsg(context.Background(), msg); err != nil {
					t.Fatal(err)
				}

				st := meshtest.WaitRun(t, o.Store(), run, 10*time.Second)
				took := time.Since(sent)
				step := st.Steps["loop"]
				if st.Status != schemas.RunFailed || step.Status != schemas.StepFailed || step.Code != schemas.CodeMalformedResult {
					t.Fatalf("run %s, step %+v; want both failed with code %s", st.Status, step, schemas.CodeMalformedResult)
				}
				if took > 5*time.Second {
					t.Errorf("the step failed %v after the result; want at once, not at its 30s timeout", took)
				}
				for _, want := range []string{schemas.CodeMalformedResult, taskID, mg.mention} {
					if !strings.Contains(step.Error, want) {
						t.Errorf("step error %q does not mention %q", step.Error, want)
					}
				}
				dead++
				dl := lastDead(t, m, "StuckText", dead)
				if dl.Header.Get("ce-id") != ev.ID {
					t.Errorf("dead letter %v is not the result sent (id %s)", dl.Header, ev.ID)
				}
				if r := dl.Header.Get(bus.HeaderDeadReason); !strings.Contains(r, schemas.CodeMalformedResult) {
					t.Errorf("dead letter reason %q", r)
				}
			})
		}
	}
}
