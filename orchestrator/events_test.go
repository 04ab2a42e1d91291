package orchestrator_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// Every event a real run emits, each kind of step event and the run's end,
// is valid against the JSON Schema that clients in other languages use.
func TestRunEventsMatchTheirSchemas(t *testing.T) {
	m := meshtest.New(t)
	m.Agent(t, schemas.AgentContract{Name: "Fine", Capability: schemas.CapTransformation, Description: "succeeds",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return fixture.OK("Fine", "fine", map[string]schemas.TypedValue{"text": {DataType: schemas.TypeText, Value: []byte(`"hello"`)}}), nil
		}, 4)
	m.Agent(t, schemas.AgentContract{Name: "Broken", Capability: schemas.CapTransformation, Description: "fails"},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.AgentResult{Agent: "Broken", Error: &schemas.ResultError{Code: schemas.CodeAgentError, Message: "out of ink"}}, nil
		}, 4)
	m.Orchestrator(t, []string{"Fine", "Broken"})

	spec := client.NewPipeline("events").
		Step("first", "Fine").
		Then("broken", "Broken").
		Then("never", "Fine").
		Step("side", "Fine").After("first").
		MustBuild()
	events := m.Events(t, "events-run")
	m.Submit(t, spec, "events-run")

	seen := map[string]int{}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			schema := schemas.SchemaStepEvent
			if ev.Type == bus.TypePipelineCompleted {
				schema = schemas.SchemaRunEvent
			}
			if err := schemas.ValidateJSON(schema, ev.Data); err != nil {
				t.Errorf("%s event is not a valid %s: %v\n%s", ev.Type, schema, err, ev.Data)
			}
			seen[ev.Type]++
			if ev.Type != bus.TypePipelineCompleted {
				continue
			}
			want := map[string]int{
				bus.TypeStepStarted:       3, // first, broken, side
				bus.TypeStepCompleted:     2, // first, side
				bus.TypeStepFailed:        1, // broken
				bus.TypeStepSkipped:       1, // never
				bus.TypePipelineCompleted: 1,
			}
			for typ, n := range want {
				if seen[typ] != n {
					t.Errorf("%d %s events, want %d (all: %v)", seen[typ], typ, n, seen)
				}
			}
			return
		case <-timeout:
			t.Fatalf("the run did not end; events so far: %v", seen)
		}
	}
}

// The event that ends a run is stored even when the events stream cannot
// take it at the moment the run ends, as while its leader is elected after
// the node holding it was cut off (here the stream listens elsewhere for a
// while): the replica waits for the stream and sends it again. With a core
// publish the run ended in KV, its end was dropped without a word, and the
// client waiting for it never heard.
func TestRunEndStoredAfterEventsStreamOutage(t *testing.T) {
	m := meshtest.New(t)
	release := make(chan struct{})
	m.Agent(t, schemas.AgentContract{Name: "Held", Capability: schemas.CapTransformation, Description: "answers when released"},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			<-release
			return fixture.OK("Held", "done", nil), nil
		}, 1)
	o := m.Orchestrator(t, []string{"Held"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := m.Srv.Names()
	js := m.Srv.JetStream(t)
	events, err := js.Stream(ctx, names.EventsStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := events.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// No stream takes the run's events while it ends.
	parked := info.Config
	parked.Subjects = []string{names.Events("parked", "by-test")}
	if _, err := js.UpdateStream(ctx, parked); err != nil {
		t.Fatal(err)
	}
	id := m.Submit(t, client.NewPipeline("outage").Step("held", "Held").MustBuild(), "outage-run")
	close(release)
	if r := meshtest.WaitRun(t, o.Store(), id, 20*time.Second); r.Status != schemas.RunCompleted {
		t.Fatalf("run ended %s, want completed", r.Status)
	}
	if _, err := js.UpdateStream(ctx, info.Config); err != nil {
		t.Fatal(err)
	}
	var msg *jetstream.RawStreamMsg
	if !fixture.Within(30*time.Second, func() bool {
		msg, err = events.GetLastMsgForSubject(ctx, names.Events(id, "pipeline"))
		return err == nil
	}) {
		t.Fatalf("the run's end was never stored once the events stream took events again: %v", err)
	}
	var end schemas.RunEvent
	ev, err := bus.Decode(&nats.Msg{Subject: msg.Subject, Header: msg.Header, Data: msg.Data})
	if err == nil {
		err = ev.DataAs(&end)
	}
	if err != nil || ev.Type != bus.TypePipelineCompleted || end.Status != schemas.RunCompleted {
		t.Fatalf("the run's end is stored as %s %s (%v), want a completed %s", ev.Type, msg.Data, err, bus.TypePipelineCompleted)
	}
}
