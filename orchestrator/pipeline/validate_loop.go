package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// checkLoops checks what the structural checks of loop steps cannot: a
// for_each's items go to an input of its agent, a list variable it names
// is declared, a repeat's until compiles (it also reads output.<name>
// and iteration), a list variable holds at most limits.ForEachItems items.
// It returns spec with each for_each's item input mapped to its items
// (itemsView), for the checks of inputs.
func checkLoops(spec schemas.PipelineSpec, contracts map[string]schemas.AgentContract, limits schemas.Limits) (schemas.PipelineSpec, []error) {
	var errs []error
	view := spec
	for _, s := range spec.Steps {
		switch {
		case s.Kind == schemas.StepKindRepeat && s.Repeat != nil && s.Repeat.Until != "":
			if _, _, err := compileConditionWith(s.Repeat.Until, spec.Vars, ancestors(spec, s.ID), untilNames(nil, 0)); err != nil {
				errs = append(errs, fmt.Errorf("step %q: repeat.until: %w", s.ID, err))
			}
		case s.Kind == schemas.StepKindForEach && s.ForEach != nil && s.ForEach.Items != "":
			if name, isVar := strings.CutPrefix(s.ForEach.Items, varsPrefix); isVar && spec.Vars[name] != nil {
				if items, err := listItems(spec.Vars[name], s.ForEach.Items); err == nil && len(items.Values) > limits.ForEachItems {
					errs = append(errs, schemas.ItemsOverLimit(s.ID, s.ForEach.Items, len(items.Values), limits.ForEachItems))
				}
			}
			c, ok := contracts[s.Agent]
			if !ok {
				continue // unknown agent, reported
			}
			in, err := itemInput(s, c)
			if err != nil {
				errs = append(errs, fmt.Errorf("step %q: %w", s.ID, err))
				continue
			}
			if name, isVar := strings.CutPrefix(s.ForEach.Items, varsPrefix); isVar {
				v, declared := spec.Vars[name]
				switch {
				case !declared:
					errs = append(errs, fmt.Errorf("step %q: for_each.items: %w %q (vars: %s)", s.ID, ErrUnknownVar, name, orNone(slices.Sorted(maps.Keys(spec.Vars)))))
					continue
				case v != nil:
					if _, err := listItems(v, s.ForEach.Items); err != nil {
						errs = append(errs, fmt.Errorf("step %q: %w", s.ID, err))
					}
				}
				if in.DataType != schemas.TypeText {
					errs = append(errs, fmt.Errorf("step %q: for_each.items %s gives TEXT items but input %q of %s takes %s", s.ID, s.ForEach.Items, in.Name, s.Agent, in.DataType))
				}
			}
			view = itemsView(view, s.ID, in.Name)
		}
	}
	return view, errs
}
