package agents

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// validateInputs checks a task's inputs against the contract (every required
// input present, no undeclared input, the declared data type, a compatible
// content type hint) and each value against its type's schema. It reports
// every problem at once; each names the input, the type and the problem.
func validateInputs(c schemas.AgentContract, reg *schemas.DataTypeRegistry, inputs map[string]schemas.TypedValue) error {
	var errs []error
	for _, in := range c.Inputs {
		v, ok := inputs[in.Name]
		if !ok {
			if in.Required {
				errs = append(errs, fmt.Errorf("input %q (%s) is required but missing", in.Name, in.DataType))
			}
			continue
		}
		if v.DataType != in.DataType {
			errs = append(errs, fmt.Errorf("input %q has data type %q; %s declares it %s", in.Name, v.DataType, c.Name, in.DataType))
			continue
		}
		if !hintCompatible(in.ContentTypeHint, v.ContentTypeHint) {
			errs = append(errs, fmt.Errorf("input %q (%s) holds %s; %s reads %s", in.Name, in.DataType, v.ContentTypeHint, c.Name, in.ContentTypeHint))
		}
		if err := reg.ValidateValue(c.Name, in.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("input %q (%s): %w", in.Name, in.DataType, err))
		}
	}
	var extra []string
	for name := range inputs {
		if _, ok := c.Input(name); !ok {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	for _, name := range extra {
		errs = append(errs, fmt.Errorf("input %q (%s) is not declared by %s (it reads: %s)", name, inputs[name].DataType, c.Name, inputNames(c)))
	}
	return errors.Join(errs...)
}

// hintCompatible reports whether a value with hint have may feed an input
// that declares want: equal, either side unspecified, or want "mixed".
func hintCompatible(want, have string) bool {
	return want == "" || have == "" || want == have || want == schemas.ContentMixed
}

func inputNames(c schemas.AgentContract) string {
	if len(c.Inputs) == 0 {
		return "no inputs"
	}
	names := make([]string, len(c.Inputs))
	for i, in := range c.Inputs {
		names[i] = in.Name
	}
	return strings.Join(names, ", ")
}

// validateOutputs checks a successful result's outputs against the contract
// and their types' schemas.
func validateOutputs(c schemas.AgentContract, reg *schemas.DataTypeRegistry, outputs map[string]schemas.TypedValue) error {
	var errs []error
	names := make([]string, 0, len(outputs))
	for name := range outputs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v := outputs[name]
		out, ok := c.Output(name)
		if !ok {
			errs = append(errs, fmt.Errorf("output %q (%s) is not declared by %s's contract", name, v.DataType, c.Name))
			continue
		}
		if v.DataType != out.DataType {
			errs = append(errs, fmt.Errorf("output %q has data type %q; the contract declares %s", name, v.DataType, out.DataType))
			continue
		}
		if err := reg.ValidateValue(c.Name, name, v); err != nil {
			errs = append(errs, fmt.Errorf("output %q: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
