package client

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/pipelinespec"
)

func TestSetVars(t *testing.T) {
	spec, err := ParsePipeline([]byte(`
name: v
vars: {n: 2, f: 0.5, on: false, s: hi, req: null}
steps: [{id: a, agent: A}]
`), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := SetVars(spec, []string{"n=7", "f=0.25", "on=true", "s=a=b", "req=x"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": 7.0, "f": 0.25, "on": true, "s": "a=b", "req": "x"}
	for k, v := range want {
		if got.Vars[k] != v {
			t.Errorf("vars.%s = %#v, want %#v", k, got.Vars[k], v)
		}
	}
	if spec.Vars["n"] == 7.0 {
		t.Error("SetVars changed the spec it was given")
	}
	for arg, msg := range map[string]string{
		"n=many": `--var n=many: "many" is not a number, and the variable's default 2 is`,
		"on=yes": `"yes" is not true or false`,
		"x=1":    `pipeline "v" declares no variable "x" (its vars: f, n, on, req, s)`,
		"noeq":   `--var "noeq": write name=value`,
	} {
		_, err := SetVars(spec, []string{arg})
		if !errors.Is(err, ErrInvalidPipeline) || !strings.Contains(err.Error(), msg) {
			t.Errorf("--var %s: %v, want %q", arg, err, msg)
		}
	}
}

func TestBuilderWorkflow(t *testing.T) {
	spec, err := NewPipeline("w").Var("mode", "loud").
		Step("a", "A").When(`vars.mode == "loud"`).
		Router("r", "b", pipelinespec.RouterBranch{Step: "b"}, pipelinespec.RouterBranch{Step: "c", When: "true"}).RouterPrompt("pick").
		Then("b", "B").Step("c", "C").After("r").
		Evaluator("judge", "a.out", "good?").
		Build()
	if err != nil {
		t.Fatal(err)
	}
	if spec.Steps[0].When != `vars.mode == "loud"` || spec.Vars["mode"] != "loud" {
		t.Errorf("when/vars: %+v %v", spec.Steps[0], spec.Vars)
	}
	if r := spec.Steps[1]; r.Kind != pipelinespec.StepKindRouter || r.Router.Default != "b" || r.Router.Prompt != "pick" || len(r.Router.Branches) != 2 {
		t.Errorf("router: %+v", r)
	}
	if e := spec.Steps[4]; e.Kind != pipelinespec.StepKindEvaluator || e.Evaluate.Output != "a.out" || e.DependsOn[0] != "a" {
		t.Errorf("evaluator: %+v", e)
	}

	// A branch that does not depend on its router, and a router with an agent.
	_, err = NewPipeline("bad").Router("r", "z", pipelinespec.RouterBranch{Step: "b"}).Step("b", "B").Build()
	for _, want := range []string{`branch "b" must depend on the router; add "r" to its depends_on`, `router.default "z" is not one of its branches`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}
