package pipeline_test

import (
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// joinSpec routes its text to loud (then after_loud) or quiet, and join
// depends on both paths and reads the text of the one that ran; tail
// follows after_loud only.
func joinSpec() pipelinespec.PipelineSpec {
	return client.NewPipeline("join").
		SeedValue("text", schemas.TypeText, "", "Route me").
		Var("style", "shout").
		Router("route", "",
			pipelinespec.RouterBranch{Step: "loud", When: `vars.style == "shout"`},
			pipelinespec.RouterBranch{Step: "quiet", When: `vars.style == "whisper"`}).
		Then("loud", text.Name).Param("op", "upper").Input("text", "seed.text").
		Then("after_loud", text.Name).Param("op", "reverse").
		Step("quiet", text.Name).After("route").Param("op", "lower").Input("text", "seed.text").
		Step("join", text.Name).After("after_loud", "quiet").Param("op", "title").
		Step("tail", text.Name).After("after_loud").Param("op", "upper").
		MustBuild()
}

// TestJoinAfterRouter: a step after several branches of a router runs
// once the chosen branch ends, with that branch's output; the branch not
// taken does not block it. With no branch chosen it is skipped, saying so.
func TestJoinAfterRouter(t *testing.T) {
	m := meshtest.New(t)
	m.Run(t, text.New())
	o := m.Orchestrator(t, []string{text.Name})

	r := meshtest.WaitRun(t, o.Store(), m.Submit(t, joinSpec(), ""), 10*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	wantSkipped(t, r, "quiet", `router "route" chose "loud"`)
	if got := meshtest.TextOut(t, r, "join"); got != "Em Etuor" {
		t.Errorf("join = %q, want the title case of after_loud's EM ETUOR", got)
	}

	spec, err := client.SetVars(joinSpec(), []string{"style=whisper"})
	if err != nil {
		t.Fatal(err)
	}
	r = meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, ""), 10*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	wantSkipped(t, r, "after_loud", `dependency "loud" was skipped (its branch was not taken)`)
	wantSkipped(t, r, "tail", `dependency "after_loud" was skipped`)
	if got := meshtest.TextOut(t, r, "join"); got != "Route Me" {
		t.Errorf("join = %q, want the title case of quiet's route me", got)
	}

	spec, err = client.SetVars(joinSpec(), []string{"style=none"})
	if err != nil {
		t.Fatal(err)
	}
	r = meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, ""), 10*time.Second)
	if r.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	wantSkipped(t, r, "quiet", `router "route" chose no branch`)
	wantSkipped(t, r, "join", `was skipped (its branch was not taken)`)
}
