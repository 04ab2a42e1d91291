package pipeline

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// packageCalls lists, per non-test file of this package, the selector
// calls whose method name is one of names (x.store.PutHeader, say).
func packageCalls(t *testing.T, names ...string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string][]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && slices.Contains(names, sel.Sel.Name) {
				out[f] = append(out[f], fmt.Sprintf("%s (line %d)", sel.Sel.Name, fset.Position(call.Pos()).Line))
			}
			return true
		})
	}
	return out
}

// TestOneRunWriter pins the scheduler's one run writer: every write of a
// run's header is in settle.go (settle for step ends, amend for the
// rest), so no kind or sweep keeps a compare-and-set loop of its own.
func TestOneRunWriter(t *testing.T) {
	for file, calls := range packageCalls(t, "UpdateHeader", "PutHeader", "PutHeaderAsync") {
		if file != "settle.go" {
			t.Errorf("%s writes a run's header (%s); change it through amend or settle in settle.go", file, strings.Join(calls, ", "))
		}
	}
}

// TestKindsValidateTheirSteps: each kind checks what is its own through
// its validate (the checks Validate leaves to the kinds), and a step of
// another kind is none of its business.
func TestKindsValidateTheirSteps(t *testing.T) {
	spec := pipelinespec.PipelineSpec{Name: "p", Vars: map[string]any{"n": 1}, Steps: []pipelinespec.PipelineStep{{ID: "a", Agent: "A"}}}
	c := &checks{spec: spec, view: spec, contracts: map[string]schemas.AgentContract{}, router: route.NewRouter(), limits: pipelinespec.Limits{}.OrDefaults()}
	cases := []struct {
		name string
		step pipelinespec.PipelineStep
		want string // "" for no problem
	}{
		{"router rule", pipelinespec.PipelineStep{ID: "r", Kind: KindRouter, DependsOn: []string{"a"},
			Router: &pipelinespec.RouterSpec{Branches: []pipelinespec.RouterBranch{{Step: "x", When: "vars.n >"}}}}, "router.branches[0].when"},
		{"router prompt", pipelinespec.PipelineStep{ID: "r", Kind: KindRouter,
			Router: &pipelinespec.RouterSpec{Prompt: "${vars.nope}", Branches: []pipelinespec.RouterBranch{{Step: "x"}}}}, "router.prompt"},
		{"router fine", pipelinespec.PipelineStep{ID: "r", Kind: KindRouter, DependsOn: []string{"a"},
			Router: &pipelinespec.RouterSpec{Branches: []pipelinespec.RouterBranch{{Step: "x", When: "vars.n > 0"}}}}, ""},
		{"repeat until", pipelinespec.PipelineStep{ID: "l", Kind: pipelinespec.StepKindRepeat, Agent: "A",
			Repeat: &pipelinespec.RepeatSpec{Until: "output.x ==", MaxIterations: 3}}, "repeat.until"},
		{"input default", pipelinespec.PipelineStep{ID: "i", Kind: pipelinespec.StepKindInput,
			Human: &pipelinespec.HumanStep{Prompt: "how many?", DataType: schemas.TypeText, Default: 7}}, "human.default"},
		{"evaluator source", pipelinespec.PipelineStep{ID: "e", Kind: KindEvaluator,
			Evaluate: &pipelinespec.EvaluateSpec{Output: "seed.nothing", Criteria: "good"}}, "evaluate.output"},
		{"agent", pipelinespec.PipelineStep{ID: "b", Agent: "A"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := kindOf(tc.step)
			if err != nil {
				t.Fatal(err)
			}
			errs := k.validate(c, tc.step)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Fatalf("problems %v, want none", errs)
			case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) || !strings.Contains(errs[0].Error(), fmt.Sprintf("step %q", tc.step.ID))):
				t.Fatalf("problems %v, want one naming step %q and %s", errs, tc.step.ID, tc.want)
			}
		})
	}
}
