package client

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/internal/pipespec"
	"github.com/agentmesh/agentmesh/pipelinespec"
)

// SetVars returns spec with its variables set from assignments of the form
// name=value (agentmesh run --var). A value takes the type of the
// variable's default: a number or a boolean is parsed as one, anything
// else is a string. Naming a variable the spec does not declare, or a
// value that does not parse, is an error that says which.
func SetVars(spec pipelinespec.PipelineSpec, assignments []string) (pipelinespec.PipelineSpec, error) {
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

// varValue parses raw as a value of def's type (pipespec.ValueLike).
func varValue(def any, raw string) (any, error) { return pipespec.ValueLike(def, raw) }
