package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// A step pinned to a version (version: in the spec) is answered by that
// version's instances only, each step by its own.
func TestStepPinnedToVersion(t *testing.T) {
	m := meshtest.New(t)
	contract := schemas.AgentContract{Name: "Versioned", Capability: schemas.CapGeneration, Description: "says its version",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}}
	for _, v := range []string{"1.0.0", "2.0.0"} {
		m.Run(t, agents.Func(contract, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return fixture.OK("Versioned", v, map[string]schemas.TypedValue{"text": schemas.TextValue(v, "Versioned")}), nil
		}), agents.WithAgentVersion(v))
	}
	o := m.Orchestrator(t, []string{"Versioned"})
	spec := client.NewPipeline("pinned").
		Step("new", "Versioned").Version("2.0.0").
		Step("old", "Versioned").Version("1.0.0").
		MustBuild()
	for i := range 5 {
		id := m.Submit(t, spec, "")
		r := meshtest.WaitRun(t, o.Store(), id, 20*time.Second)
		if got := meshtest.TextOut(t, r, "new"); got != "2.0.0" {
			t.Fatalf("run %d: step new (pinned to 2.0.0) was answered by %s", i, got)
		}
		if got := meshtest.TextOut(t, r, "old"); got != "1.0.0" {
			t.Fatalf("run %d: step old (pinned to 1.0.0) was answered by %s", i, got)
		}
	}
}
