package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

func TestConditions(t *testing.T) {
	vars := map[string]any{"n": 3.0, "s": "x", "on": true, "any": nil}
	rec := &state.StepState{ID: "a", Status: schemas.StepCompleted, Summary: "did a",
		Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue("12", "A")}}
	for _, tc := range []struct {
		src  string
		want bool
		err  string // at compile
	}{
		{src: `vars.n > 2 && vars.s == "x" && vars.on`, want: true},
		{src: `steps.a.status == "completed" && int(steps.a.outputs.text) == 12`, want: true},
		{src: `steps.a.summary startsWith "did"`, want: true},
		{src: `slots.current_text == "hi"`, want: true},
		{src: `vars.n < 1`, want: false},
		{src: `vars.n + "x" == "3x"`, err: "mismatched types float64 and string"},
		{src: `vars.zz`, err: `variable "zz" is not declared (vars: any, n, on, s)`},
		{src: `steps.b.status == ""`, err: `step "b" does not run before this step (its ancestors: a)`},
		{src: `vars.n`, err: "expected bool"},
		{src: `nope == 1`, err: "unknown name nope"},
		{src: `vars.n >`, err: "unexpected token EOF"},
	} {
		read, env, err := compileCondition(tc.src, vars, []string{"a"})
		if tc.err != "" {
			if err == nil || !errors.Is(err, ErrBadCondition) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.src, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		for range read {
			env.setStep(0, rec)
		}
		env.slots["current_text"] = "hi"
		got, err := evalCondition(tc.src, env)
		if err != nil || got != tc.want {
			t.Errorf("%s = %v, %v; want %v", tc.src, got, err, tc.want)
		}
	}
}

func TestResolveParams(t *testing.T) {
	vars := map[string]any{"n": 3.0, "topic": "cats"}
	got, err := resolveParams(map[string]any{"n": "${vars.n}", "q": "about ${vars.topic} x${vars.n}",
		"nested": []any{map[string]any{"t": "${vars.topic}"}}, "plain": 1.0}, vars)
	if err != nil {
		t.Fatal(err)
	}
	if got["n"] != 3.0 || got["q"] != "about cats x3" || got["nested"].([]any)[0].(map[string]any)["t"] != "cats" || got["plain"] != 1.0 {
		t.Errorf("resolved %v", got)
	}
	_, err = resolveParams(map[string]any{"a": "${vars.x}", "b": "y ${vars.y}"}, vars)
	if !errors.Is(err, ErrUnknownVar) || !strings.Contains(err.Error(), `"${vars.x}"`) || !strings.Contains(err.Error(), `"${vars.y}"`) {
		t.Errorf("error %v", err)
	}
}

func TestAncestors(t *testing.T) {
	spec := pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{
		{ID: "a"}, {ID: "b", DependsOn: []string{"a"}}, {ID: "c", DependsOn: []string{"b", "a"}}, {ID: "d"}}}
	if got := strings.Join(ancestors(spec, "c"), ","); got != "a,b" {
		t.Errorf("ancestors(c) = %s", got)
	}
	if got := ancestors(spec, "d"); len(got) != 0 {
		t.Errorf("ancestors(d) = %v", got)
	}
}

// FuzzCondition: any condition text compiles or is refused with
// ErrBadCondition, and one that compiles evaluates without panicking.
func FuzzCondition(f *testing.F) {
	for _, s := range []string{`vars.n > 1`, `steps.a.outputs.x.score >= 0.5`, `slots.t contains "x"`, `vars.s matches "^a"`, `(`, `vars.n + "x"`, `len(steps.a.outputs) > 0 ? true : false`} {
		f.Add(s)
	}
	vars := map[string]any{"n": 2.0, "s": "abc"}
	f.Fuzz(func(t *testing.T, src string) {
		_, env, err := compileCondition(src, vars, []string{"a"})
		if err != nil {
			if !errors.Is(err, ErrBadCondition) {
				t.Fatalf("%q: error %v does not wrap ErrBadCondition", src, err)
			}
			return
		}
		if _, err := evalCondition(src, env); err != nil && !errors.Is(err, ErrBadCondition) {
			t.Fatalf("%q: run error %v does not wrap ErrBadCondition", src, err)
		}
	})
}
