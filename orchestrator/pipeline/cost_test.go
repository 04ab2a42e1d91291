package pipeline_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/schemas"
)

// Each step's event carries what its agent reported (tokens, cost, model
// time, its duration as tool time), failed steps included, and the run's
// event carries the sums; the observer hears the same.
func TestRunTotalsAreTheSumOfTheSteps(t *testing.T) {
	m := meshtest.New(t)
	usage := func(n int) schemas.Metrics {
		return schemas.Metrics{Tokens: schemas.Tokens{Prompt: 10 * n, Completion: n}, Cost: 0.001 * float64(n), ModelMS: int64(n)}
	}
	m.Agent(t, schemas.AgentContract{Name: "Costly", Capability: schemas.CapGeneration, Description: "spends n units",
		Params:  json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			n := int(ec.Params()["n"].(float64))
			res := fixture.OK("Costly", "spent", map[string]schemas.TypedValue{"text": schemas.TextValue("x", "Costly")})
			res.Metrics = usage(n)
			return res, nil
		}, 4)
	m.Agent(t, schemas.AgentContract{Name: "Wasteful", Capability: schemas.CapGeneration, Description: "spends, then fails"},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			res := schemas.Failure("Wasteful", schemas.CodeAgentError, "the model said no", false)
			res.Metrics = usage(8)
			return res, nil
		}, 4)
	observed := make(chan schemas.RunChanged, 4)
	m.Orchestrator(t, []string{"Costly", "Wasteful"}, orchestrator.WithObserver(schemas.ObserverFunc(func(_ context.Context, o schemas.Observation) {
		if rc, ok := o.(schemas.RunChanged); ok && rc.Status != schemas.RunRunning {
			observed <- rc
		}
	})))

	spec := client.NewPipeline("costs").
		Step("one", "Costly").Param("n", 1).
		Then("two", "Costly").Param("n", 2).
		Step("four", "Costly").Param("n", 4).
		Step("waste", "Wasteful").
		MustBuild()
	events := m.Events(t, "cost-run")
	m.Submit(t, spec, "cost-run")

	var steps schemas.Usage
	ended := 0
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			switch ev.Type {
			case bus.TypeStepCompleted, bus.TypeStepFailed:
				var se schemas.StepEvent
				if err := ev.DataAs(&se); err != nil {
					t.Fatal(err)
				}
				n := map[string]int{"one": 1, "two": 2, "four": 4, "waste": 8}[se.Step]
				if want := usage(n); se.Tokens != want.Tokens || se.Cost != want.Cost || se.ModelMS != want.ModelMS || se.ToolMS < 0 {
					t.Errorf("step %s carries %+v; want %+v", se.Step, se.Usage, want)
				}
				steps = steps.Add(se.Usage)
				ended++
			case bus.TypePipelineCompleted:
				var re schemas.RunEvent
				if err := ev.DataAs(&re); err != nil {
					t.Fatal(err)
				}
				if ended != 4 || re.Status != schemas.RunFailed {
					t.Fatalf("run %s after %d step ends; want failed after 4", re.Status, ended)
				}
				want := schemas.Tokens{Prompt: 10 * 15, Completion: 15}
				if re.Tokens != want || re.Tokens != steps.Tokens || math.Abs(re.Cost-0.015) > 1e-12 || re.ModelMS != 15 || re.ToolMS != steps.ToolMS {
					t.Fatalf("run totals %+v; want tokens %+v, cost 0.015, model 15ms and the steps' tool time %dms", re.Usage, want, steps.ToolMS)
				}
				select {
				case rc := <-observed:
					if rc.Usage != re.Usage {
						t.Fatalf("the observer heard %+v; the event says %+v", rc.Usage, re.Usage)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the observer heard no end of the run")
				}
				return
			}
		case <-timeout:
			t.Fatalf("the run did not end; %d steps ended", ended)
		}
	}
}
