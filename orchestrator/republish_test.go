package orchestrator_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// A step whose task the stream acknowledged once published again, and yet
// did not keep (a node back from a partition answered as the stream's
// leader it no longer was; here a decoy stream takes the tasks for a
// while), is published again later: once was not enough, and the step
// waited out its timeout (an hour for TextAgent).
func TestStepPublishedAgainUntilItsTaskIsKept(t *testing.T) {
	m := meshtest.New(t)
	m.Agent(t, schemas.AgentContract{Name: "Slow", Capability: schemas.CapTransformation, Description: "answers, within an hour",
		TimeoutMS: time.Hour.Milliseconds()},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return fixture.OK("Slow", "done", nil), nil
		}, 1)
	o := m.Orchestrator(t, []string{"Slow"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := m.Srv.JetStream(t)
	tasks, err := m.Res.Tasks.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The decoy acknowledges the step's task and its first publish again.
	moved := tasks.Config
	moved.Subjects = []string{"agentmesh-test.parked"}
	if _, err := js.UpdateStream(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DECOY", Subjects: tasks.Config.Subjects, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	id := m.Submit(t, client.NewPipeline("kept").Step("slow", "Slow").MustBuild(), "kept-run")
	fixture.Eventually(t, "the step's task published again", func() bool {
		h, _, err := o.Store().Header(ctx, id)
		return err == nil && h.Republished
	})
	if err := js.DeleteStream(ctx, "DECOY"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.UpdateStream(ctx, tasks.Config); err != nil {
		t.Fatal(err)
	}
	if r := meshtest.WaitRun(t, o.Store(), id, 25*time.Second); r.Status != schemas.RunCompleted {
		t.Fatalf("run ended %s, want completed", r.Status)
	}
}
