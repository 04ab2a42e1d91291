package orchestrator_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestUndecodableResultFailsStepAtOnce: a result that names a running step
// but cannot be decoded fails that step at once with the decode error
// (code malformed_result), in its record and its step.failed event, instead
// of the step waiting out its 30 s timeout; the message is kept on
// mesh.dead.<agent>.
func TestUndecodableResultFailsStepAtOnce(t *testing.T) {
	m := meshtest.New(t)
	started := make(chan struct{}, 4)
	release := make(chan struct{})
	defer close(release)
	m.Agent(t, schemas.AgentContract{Name: "StuckAgent", Capability: schemas.CapEvaluation, Description: "never answers by itself"},
		stuck(started, release), 4)
	o := m.Orchestrator(t, []string{"StuckAgent"})
	names := m.Srv.Names()
	js := m.Srv.JetStream(t)

	tests := []struct {
		name    string
		mangle  func(ev *bus.Event, msg *nats.Msg)
		mention string
	}{
		{"a header value that is not UTF-8", func(ev *bus.Event, msg *nats.Msg) {
			msg.Header.Set("ce-subject", "%C0%A0")
		}, "%C0%A0"},
		{"data that is not JSON", func(ev *bus.Event, msg *nats.Msg) {
			msg.Data = []byte("{not json")
		}, "invalid event data"},
		{"no type, and only the subject and taskid to name the step", func(ev *bus.Event, msg *nats.Msg) {
			msg.Header.Del("ce-type")
			msg.Header.Del("ce-runid")
			msg.Header.Del("ce-stepid")
		}, "type"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := client.NewPipeline("undecodable").Step("stuck", "StuckAgent").Timeout(30 * time.Second).MustBuild()
			run := m.Submit(t, spec, "")
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("the step's task never reached the agent")
			}
			taskID := pipelinespec.StepTaskID(run, "stuck", 1, meshtest.Nonce(t, o, run))
			ev, err := bus.NewEvent(bus.TypeTaskCompleted, "test", fixture.OK("StuckAgent", "fine", nil))
			if err != nil {
				t.Fatal(err)
			}
			ev.SetExt(bus.ExtTaskID, taskID)
			ev.SetExt(bus.ExtRunID, run)
			ev.SetExt(bus.ExtStepID, "stuck")
			msg, err := bus.Encode(names.OrchestratorResult("StuckAgent", run), ev)
			if err != nil {
				t.Fatal(err)
			}
			tt.mangle(&ev, msg)
			sent := time.Now()
			if _, err := js.PublishMsg(context.Background(), msg); err != nil {
				t.Fatal(err)
			}

			st := meshtest.WaitRun(t, o.Store(), run, 10*time.Second)
			took := time.Since(sent)
			step := st.Steps["stuck"]
			if st.Status != schemas.RunFailed || step.Status != schemas.StepFailed {
				t.Fatalf("run %s, step %+v; want both failed", st.Status, step)
			}
			if took > 5*time.Second {
				t.Errorf("the step failed %v after the result; want at once, not at its 30s timeout", took)
			}
			for _, want := range []string{schemas.CodeMalformedResult, taskID, tt.mention} {
				if !strings.Contains(step.Error, want) {
					t.Errorf("step error %q does not mention %q", step.Error, want)
				}
			}
			if failed := stepEvent(t, js, names.Events(run, "pipeline"), bus.TypeStepFailed); !strings.Contains(failed.Error, tt.mention) {
				t.Errorf("step.failed event %+v does not carry the decode error", failed)
			}

			dead := lastDead(t, m, "StuckAgent", uint64(i+1))
			if dead.Header.Get("ce-id") != ev.ID || string(dead.Data) != string(msg.Data) {
				t.Errorf("dead letter %v %q is not the result sent (id %s)", dead.Header, dead.Data, ev.ID)
			}
			if r := dead.Header.Get(bus.HeaderDeadReason); !strings.Contains(r, schemas.CodeMalformedResult) || !strings.Contains(r, tt.mention) {
				t.Errorf("dead letter reason %q", r)
			}
			if a := dead.Header.Get(bus.HeaderDeadAgent); a != "StuckAgent" {
				t.Errorf("dead letter agent %q", a)
			}
		})
	}
}

// stepEvent returns the first event of type typ stored on subject.
func stepEvent(t *testing.T, js jetstream.JetStream, subject, typ string) schemas.StepEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events, stop, err := meshcore.Follow(ctx, js, bus.MustNames(bus.DefaultPrefix), subject, false)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for {
		select {
		case ev := <-events:
			if ev.Type != typ {
				continue
			}
			var se schemas.StepEvent
			if err := ev.DataAs(&se); err != nil {
				t.Fatal(err)
			}
			return se
		case <-ctx.Done():
			t.Fatalf("no %s event on %s", typ, subject)
		}
	}
}

// lastDead waits until mesh.dead.<agent> holds n messages and returns the
// last.
func lastDead(t *testing.T, m *meshtest.Mesh, agent string, n uint64) *jetstream.RawStreamMsg {
	t.Helper()
	subject, err := m.Srv.Names().Dead(agent)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fixture.Eventually(t, "the dead letter", func() bool {
		info, err := m.Res.Dead.Info(ctx, jetstream.WithSubjectFilter(subject))
		return err == nil && info.State.Subjects[subject] >= n
	})
	msg, err := m.Res.Dead.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// stuck is the Execute of an agent that never answers by itself: it says
// it started, then waits until release is closed or its task ends.
func stuck(started chan<- struct{}, release <-chan struct{}) func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
	return func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return schemas.AgentResult{}, errors.New("released")
	}
}
