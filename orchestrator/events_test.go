package orchestrator_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/internal/meshtest"

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
			return meshtest.OK("Fine", "fine", map[string]schemas.TypedValue{"text": {DataType: schemas.TypeText, Value: []byte(`"hello"`)}}), nil
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
