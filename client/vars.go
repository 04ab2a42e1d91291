package client

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// SetVars returns spec with its variables set from assignments of the form
// name=value (agentmesh run --var). A value takes the type of the
// variable's default: a number or a boolean is parsed as one, anything
// else is a string. Naming a variable the spec does not declare, or a
// value that does not parse, is an error that says which.
func SetVars(spec schemas.PipelineSpec, assignments []string) (schemas.PipelineSpec, error) {
	if len(assignments) == 0 {
		return spec, nil
	}
	vars := maps.Clone(spec.Vars)
	if vars == nil {
		vars = map[string]any{}
	}
	declared := slices.Sorted(maps.Keys(spec.Vars))
	for _, a := range assignments {
		name, raw, ok := strings.Cut(a, "=")
		if !ok || name == "" {
			return spec, fmt.Errorf("%w: --var %q: write name=value", ErrInvalidPipeline, a)
		}
		def, ok := spec.Vars[name]
		if !ok {
			known := strings.Join(declared, ", ")
			if known == "" {
				known = "none"
			}
			return spec, fmt.Errorf("%w: --var %s: pipeline %q declares no variable %q (its vars: %s)", ErrInvalidPipeline, a, spec.Name, name, known)
		}
		v, err := varValue(def, raw)
		if err != nil {
			return spec, fmt.Errorf("%w: --var %s: %w", ErrInvalidPipeline, a, err)
		}
		vars[name] = v
	}
	spec.Vars = vars
	return spec, nil
}

// ValueLike parses raw as a value of def's type, as SetVars does: a
// number or a boolean is parsed as one, a list from JSON or from items
// separated by commas, anything else stays a string.
func ValueLike(def any, raw string) (any, error) { return varValue(def, raw) }

// varValue parses raw as a value of def's type.
func varValue(def any, raw string) (any, error) {
	switch def.(type) {
	case float64, float32, int, int64, int32, uint64, uint:
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number, and the variable's default %v is", raw, def)
		}
		return f, nil
	case bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false, and the variable's default %v is", raw, def)
		}
		return b, nil
	case []any:
		// A list: a JSON array, or else items separated by commas.
		if strings.HasPrefix(strings.TrimSpace(raw), "[") {
			var list []any
			if err := json.Unmarshal([]byte(raw), &list); err != nil {
				return nil, fmt.Errorf("%q is not a JSON list (%v), and the variable's default is a list; write [\"a\",\"b\"] or a,b", raw, err)
			}
			return list, nil
		}
		var list []any
		for _, item := range strings.Split(raw, ",") {
			list = append(list, strings.TrimSpace(item))
		}
		return list, nil
	}
	return raw, nil
}
