package pipeline_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// Events are stored in causal order, whichever of two replicas applies
// which result: a step's started event never precedes the end (completed,
// failed or skipped) of a step it depends on, and a run's end comes after
// every event of its steps. Many runs of a wide DAG at once, an agent that
// answers at once (so the next wave's tasks go out ahead of the header
// write) and one that fails (so the wave after skips).
func TestEventsAreStoredInCausalOrder(t *testing.T) {
	m := meshtest.New(t)
	m.Agent(t, schemas.AgentContract{Name: "Quick", Capability: schemas.CapTransformation, Description: "answers at once",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return fixture.OK("Quick", "quick", map[string]schemas.TypedValue{"text": schemas.TextValue("x", "Quick")}), nil
		}, 32)
	m.Agent(t, schemas.AgentContract{Name: "Broken", Capability: schemas.CapTransformation, Description: "fails"},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.Failure("Broken", schemas.CodeInvalidParams, "no ink", false), nil
		}, 8)
	o := m.Orchestrator(t, []string{"Quick", "Broken"})
	m.Orchestrator(t, []string{"Quick", "Broken"})

	// a -> b1..b6 -> c (joins b1..b6) -> d1, d2; and a failing branch:
	// a -> x (Broken) -> y (skipped) -> z (skipped).
	b := client.NewPipeline("causal").Step("a", "Quick")
	var bs []string
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("b%d", i)
		b, bs = b.Step(id, "Quick").After("a"), append(bs, id)
	}
	b = b.Step("c", "Quick").After(bs...).Step("d1", "Quick").After("c").Step("d2", "Quick").After("c")
	b = b.Step("x", "Broken").After("a").Step("y", "Quick").After("x").Step("z", "Quick").After("y")
	spec := b.MustBuild()
	deps := map[string][]string{}
	for _, st := range spec.Steps {
		deps[st.ID] = st.DependsOn
	}

	const runs = 30
	for i := range runs {
		m.Submit(t, spec, fmt.Sprintf("causal-%d", i))
	}
	for i := range runs {
		id := fmt.Sprintf("causal-%d", i)
		meshtest.WaitRun(t, o.Store(), id, 60*time.Second)
		// started for the steps that ran (not y, z), an end for every
		// step, and the run's end.
		want := (len(spec.Steps) - 2) + len(spec.Steps) + 1
		evs := storedEvents(t, m, id, want)
		ended := map[string]int{}
		runEnd := -1
		for n, ev := range evs {
			if ev.Type == bus.TypePipelineCompleted {
				runEnd = n
				continue
			}
			var se schemas.StepEvent
			if err := ev.DataAs(&se); err != nil {
				t.Fatal(err)
			}
			if runEnd >= 0 {
				t.Errorf("run %s: step %s's %s event stored after the run's end", id, se.Step, se.Status)
			}
			switch se.Status {
			case schemas.StepRunning:
				for _, d := range deps[se.Step] {
					if _, ok := ended[d]; !ok {
						t.Errorf("run %s: step %s started (event %d) before its dependency %s ended", id, se.Step, n, d)
					}
				}
			case schemas.StepCompleted, schemas.StepFailed, schemas.StepSkipped:
				ended[se.Step] = n
			}
		}
		if runEnd < 0 {
			t.Errorf("run %s: no end stored", id)
		}
	}
}
