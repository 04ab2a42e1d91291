package pipeline

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// Conditions are expr-lang expressions (https://expr-lang.org) that yield a
// boolean. They read three names:
//
//	vars.<name>                    a workflow variable, typed by its value
//	slots.<slot>                   the run's slot, its value as JSON
//	steps.<id>.status / .summary   an ancestor step of the condition's step
//	steps.<id>.outputs.<name>      one of its outputs' values, as JSON
//
// A condition is compiled at submit against the run's variables (so
// vars.n + "x" with a number n is an error then) and the step's ancestors
// (a step that does not run before it cannot be read).

// stepView is what a condition reads of an earlier step.
type stepView struct {
	Status  string         `expr:"status"`
	Summary string         `expr:"summary"`
	Outputs map[string]any `expr:"outputs"`
}

// condEnv is the environment a condition is compiled and run against.
type condEnv struct {
	vars  reflect.Value // a struct with one field per variable
	steps reflect.Value // a struct with one stepView per ancestor
	slots map[string]any
	// extra are the names only some conditions read (a repeat's until:
	// output and iteration).
	extra map[string]any
}

func (e condEnv) env() map[string]any {
	m := map[string]any{"vars": e.vars.Interface(), "steps": e.steps.Interface(), "slots": e.slots}
	for k, v := range e.extra {
		m[k] = v
	}
	return m
}

var anyType = reflect.TypeOf((*any)(nil)).Elem()

// newCondEnv builds the environment for vars and the ancestors ids, with
// zero step views and no slots.
func newCondEnv(vars map[string]any, ids []string) condEnv {
	names := slices.Sorted(maps.Keys(vars))
	vf := make([]reflect.StructField, len(names))
	for i, n := range names {
		t := anyType
		if v := vars[n]; v != nil {
			t = reflect.TypeOf(v)
		}
		vf[i] = reflect.StructField{Name: fmt.Sprintf("V%d", i), Type: t, Tag: reflect.StructTag(fmt.Sprintf("expr:%q", n))}
	}
	vv := reflect.New(reflect.StructOf(vf)).Elem()
	for i, n := range names {
		if v := vars[n]; v != nil {
			vv.Field(i).Set(reflect.ValueOf(v))
		}
	}
	sf := make([]reflect.StructField, len(ids))
	for i, id := range ids {
		sf[i] = reflect.StructField{Name: fmt.Sprintf("S%d", i), Type: reflect.TypeOf(stepView{}), Tag: reflect.StructTag(fmt.Sprintf("expr:%q", id))}
	}
	return condEnv{vars: vv, steps: reflect.New(reflect.StructOf(sf)).Elem(), slots: map[string]any{}}
}

// setStep fills the view of ancestor i from its record.
func (e condEnv) setStep(i int, rec *state.StepState) {
	v := stepView{Status: rec.Status, Summary: rec.Summary, Outputs: map[string]any{}}
	for name, tv := range rec.Outputs {
		v.Outputs[name] = jsonValue(tv)
	}
	e.steps.Field(i).Set(reflect.ValueOf(v))
}

// jsonValue is a typed value's value decoded as plain JSON.
func jsonValue(tv schemas.TypedValue) any {
	var v any
	if json.Unmarshal(tv.Value, &v) != nil {
		return string(tv.Value)
	}
	return v
}

// condRefs are what a condition names: steps.<id> and vars.<name>.
type condRefs struct{ steps, vars []string }

func (r *condRefs) Visit(n *ast.Node) {
	m, ok := (*n).(*ast.MemberNode)
	if !ok {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok {
		return
	}
	p, ok := m.Property.(*ast.StringNode)
	if !ok {
		return
	}
	switch id.Value {
	case "steps":
		r.steps = append(r.steps, p.Value)
	case "vars":
		r.vars = append(r.vars, p.Value)
	}
}

// compileCondition checks src against vars and the ancestors of its step:
// every step and variable it names exists and can be read, and it is a
// boolean. It returns the ancestors it reads.
func compileCondition(src string, vars map[string]any, ancestors []string) ([]string, condEnv, error) {
	return compileConditionWith(src, vars, ancestors, nil)
}

// compileConditionWith is compileCondition for a condition that also reads
// the names of extra (their values give their types).
func compileConditionWith(src string, vars map[string]any, ancestors []string, extra map[string]any) ([]string, condEnv, error) {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, condEnv{}, fmt.Errorf("%w %q: %v", ErrBadCondition, src, oneLine(err))
	}
	var refs condRefs
	ast.Walk(&tree.Node, &refs)
	var errs []string
	for _, v := range refs.vars {
		if _, ok := vars[v]; !ok {
			errs = append(errs, fmt.Sprintf("variable %q is not declared (vars: %s)", v, orNone(slices.Sorted(maps.Keys(vars)))))
		}
	}
	var read []string
	for _, id := range refs.steps {
		if !slices.Contains(ancestors, id) {
			errs = append(errs, fmt.Sprintf("step %q does not run before this step (its ancestors: %s); add it to depends_on", id, orNone(ancestors)))
		} else if !slices.Contains(read, id) {
			read = append(read, id)
		}
	}
	if len(errs) > 0 {
		return nil, condEnv{}, fmt.Errorf("%w %q: %s", ErrBadCondition, src, strings.Join(errs, "; "))
	}
	env := newCondEnv(vars, ancestors)
	env.extra = extra
	if _, err := expr.Compile(src, expr.Env(env.env()), expr.AsBool()); err != nil {
		return nil, condEnv{}, fmt.Errorf("%w %q: %v", ErrBadCondition, src, oneLine(err))
	}
	return read, env, nil
}

// evalCondition runs src against env.
func evalCondition(src string, env condEnv) (bool, error) {
	out, err := expr.Eval(src, env.env())
	if err != nil {
		return false, fmt.Errorf("%w %q: %v", ErrBadCondition, src, oneLine(err))
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("%w %q: yields %T, not a boolean", ErrBadCondition, src, out)
	}
	return b, nil
}

// oneLine keeps the first line of an expr error (the rest draws the
// position under the source).
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// ancestors returns the steps id depends on, directly or not, sorted.
func ancestors(spec pipelinespec.PipelineSpec, id string) []string {
	deps := make(map[string][]string, len(spec.Steps))
	for _, s := range spec.Steps {
		deps[s.ID] = s.DependsOn
	}
	seen := map[string]bool{}
	stack := slices.Clone(deps[id])
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[d] || d == id {
			continue
		}
		seen[d] = true
		stack = append(stack, deps[d]...)
	}
	return slices.Sorted(maps.Keys(seen))
}

// checkConditions compiles every step's when and resolves every step's
// params against the vars (a router's rules are its kind's, see
// routerKind.validate).
func checkConditions(spec pipelinespec.PipelineSpec) []error {
	errs := checkVars(spec.Vars)
	for _, s := range spec.Steps {
		if _, err := resolveParams(s.Params, spec.Vars); err != nil {
			errs = append(errs, fmt.Errorf("step %q: %w", s.ID, err))
		}
		if s.When == "" {
			continue // its ancestors are not walked: a long chain stays linear
		}
		if _, _, err := compileCondition(s.When, spec.Vars, ancestors(spec, s.ID)); err != nil {
			errs = append(errs, fmt.Errorf("step %q: when: %w", s.ID, err))
		}
	}
	return errs
}
