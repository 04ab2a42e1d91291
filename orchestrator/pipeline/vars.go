package pipeline

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// varRef is a reference to a workflow variable inside a param's string.
var varRef = regexp.MustCompile(`\$\{vars\.([A-Za-z_][A-Za-z0-9_]*)\}`)

// resolveParams returns params with every "${vars.<name>}" replaced by the
// variable's value: a string that is only the reference takes the value as
// it is (a number stays a number), a longer string gets the value written
// in. Nested objects and lists are resolved too; params is not changed. A
// reference to a variable that vars does not hold is an error naming it.
func resolveParams(params map[string]any, vars map[string]any) (map[string]any, error) {
	if len(params) == 0 {
		return params, nil
	}
	var errs []string
	out, _ := resolveValue(params, vars, &errs).(map[string]any)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s is not declared; declare it under vars (its vars: %s)",
			ErrUnknownVar, strings.Join(errs, ", "), orNone(slices.Sorted(maps.Keys(vars))))
	}
	return out, nil
}

func resolveValue(v any, vars map[string]any, errs *[]string) any {
	switch x := v.(type) {
	case string:
		if m := varRef.FindStringSubmatch(x); m != nil && m[0] == x {
			val, ok := vars[m[1]]
			if !ok {
				*errs = append(*errs, fmt.Sprintf("%q", m[0]))
			}
			return val
		}
		return varRef.ReplaceAllStringFunc(x, func(ref string) string {
			name := varRef.FindStringSubmatch(ref)[1]
			val, ok := vars[name]
			if !ok {
				*errs = append(*errs, fmt.Sprintf("%q", ref))
				return ref
			}
			return fmt.Sprint(val)
		})
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = resolveValue(e, vars, errs)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = resolveValue(e, vars, errs)
		}
		return out
	}
	return v
}

// checkVars reports the variables left without a value: a null default
// that the submission did not replace.
func checkVars(vars map[string]any) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		if vars[name] == nil {
			errs = append(errs, fmt.Errorf("%w: variable %q has no value; give one at submit (agentmesh run FILE --var %s=VALUE) or a default under vars",
				ErrUnknownVar, name, name))
		}
	}
	return errs
}
