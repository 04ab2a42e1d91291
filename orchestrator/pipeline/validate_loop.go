package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// The checks of loop steps that the structural ones cannot make.

// validate checks that repeat.until compiles (it also reads output.<name>
// and iteration).
func (repeat) validate(c *checks, s pipelinespec.PipelineStep) []error {
	if s.Repeat == nil || s.Repeat.Until == "" {
		return nil
	}
	if _, _, err := compileConditionWith(s.Repeat.Until, c.spec.Vars, ancestors(c.spec, s.ID), untilNames(nil, 0)); err != nil {
		return []error{fmt.Errorf("step %q: repeat.until: %w", s.ID, err)}
	}
	return nil
}

// validate checks that a for_each's items go to an input of its agent, a
// list variable it names is declared and holds at most limits.ForEachItems
// items, and the pipeline it runs per item (checkSub). It maps the step's
// item input to its items in c.view (itemsView), for the checks of inputs.
func (forEach) validate(c *checks, s pipelinespec.PipelineStep) []error {
	errs := checkSub(c, s)
	if s.ForEach == nil || s.ForEach.Items == "" {
		return errs
	}
	spec := c.spec
	if name, isVar := strings.CutPrefix(s.ForEach.Items, varsPrefix); isVar && spec.Vars[name] != nil {
		if items, err := listItems(spec.Vars[name], s.ForEach.Items); err == nil && len(items.Values) > c.limits.ForEachItems {
			errs = append(errs, pipelinespec.ItemsOverLimit(s.ID, s.ForEach.Items, len(items.Values), c.limits.ForEachItems))
		}
	}
	ac, ok := c.contracts[s.Agent]
	if !ok {
		return errs // unknown agent, reported
	}
	in, err := itemInput(s, ac)
	if err != nil {
		return append(errs, fmt.Errorf("step %q: %w", s.ID, err))
	}
	if name, isVar := strings.CutPrefix(s.ForEach.Items, varsPrefix); isVar {
		v, declared := spec.Vars[name]
		switch {
		case !declared:
			return append(errs, fmt.Errorf("step %q: for_each.items: %w %q (vars: %s)", s.ID, ErrUnknownVar, name, orNone(slices.Sorted(maps.Keys(spec.Vars)))))
		case v != nil:
			if _, err := listItems(v, s.ForEach.Items); err != nil {
				errs = append(errs, fmt.Errorf("step %q: %w", s.ID, err))
			}
		}
		if in.DataType != schemas.TypeText {
			errs = append(errs, fmt.Errorf("step %q: for_each.items %s gives TEXT items but input %q of %s takes %s", s.ID, s.ForEach.Items, in.Name, s.Agent, in.DataType))
		}
	}
	c.view = itemsView(c.view, s.ID, in.Name)
	return errs
}
