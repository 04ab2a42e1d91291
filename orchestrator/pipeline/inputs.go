package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// stepInputs builds the task inputs of a step: an input mapped in the spec
// reads its source; an unmapped one reads what its parents produced for it
// (merged when several parallel parents produced a mergeable type), else
// the run's slots. parent returns a parent's record; slots the run's slots
// (read only when an input needs them).
func stepInputs(ctx context.Context, router *route.Router, sd *state.RunSpec, stepID string,
	parent func(id string) (*state.StepState, error), slots func() (map[string]schemas.TypedValue, error)) (map[string]schemas.TypedValue, error) {
	s, _ := sd.Step(stepID)
	c := sd.Contracts[s.Agent]
	if err := router.Declare(c); err != nil {
		return nil, fmt.Errorf("step %q (%s): %w", stepID, s.Agent, err)
	}
	builder := route.NewInputBuilder(router)
	reg := router.DataTypes()
	out := map[string]schemas.TypedValue{}
	var errs []error
	for _, in := range c.Inputs {
		if src, ok := s.Inputs[in.Name]; ok {
			v, found, err := source(sd, src, parent, slots)
			if err != nil {
				return nil, err
			}
			if found {
				out[in.Name] = v
			} else if in.Required {
				errs = append(errs, fmt.Errorf("%w: input %q maps to %s, which holds nothing", route.ErrMissingInput, in.Name, src))
			}
			continue
		}
		var (
			vals      []schemas.TypedValue
			mergeable = reg.Mergeable(in.DataType)
		)
		for _, p := range s.DependsOn {
			ps, err := parent(p)
			if errors.Is(err, state.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			pstep, _ := sd.Step(p)
			pc, _ := stepContract(sd.Contracts, pstep)
			for _, name := range slices.Sorted(maps.Keys(ps.Outputs)) {
				v := ps.Outputs[name]
				if route.Feeds(v.DataType, v.ContentTypeHint, in) {
					vals = append(vals, v)
					if o, ok := pc.Output(name); !ok || !o.Mergeable {
						mergeable = false
					}
				}
			}
		}
		switch {
		case len(vals) == 1 || (len(vals) > 1 && !mergeable):
			out[in.Name] = vals[len(vals)-1]
		case len(vals) > 1:
			m := vals[0]
			for _, v := range vals[1:] {
				var err error
				if m, err = router.Merge(ctx, m, v, "merge"); err != nil {
					return nil, fmt.Errorf("merging the parents' %s for input %q: %w", in.DataType, in.Name, err)
				}
			}
			out[in.Name] = m
		default:
			sl, err := slots()
			if err != nil {
				return nil, err
			}
			if v, _, ok := builder.Lookup(in, sl); ok {
				out[in.Name] = v
			} else if in.Required {
				errs = append(errs, fmt.Errorf("%w: input %q (%s%s): no parent produced it and no slot holds it", route.ErrMissingInput, in.Name, in.DataType, route.HintSuffix(in.ContentTypeHint)))
			}
		}
	}
	return out, errors.Join(errs...)
}

// source reads an input source of the spec: seed.<name>, <step>.<output>,
// state.<slot> or text:<literal>.
func source(sd *state.RunSpec, src string, parent func(string) (*state.StepState, error), slots func() (map[string]schemas.TypedValue, error)) (schemas.TypedValue, bool, error) {
	if text, ok := textLiteral(src); ok {
		return schemas.TextValue(text, "pipeline"), true, nil
	}
	if v, found, ok := seedSource(sd.Spec.Seed, src); ok {
		return v, found, nil
	}
	head, tail, _ := strings.Cut(src, ".")
	if head == "state" {
		sl, err := slots()
		if err != nil {
			return schemas.TypedValue{}, false, err
		}
		v, ok := sl[tail]
		return v, ok, nil
	}
	if !sd.Has(head) {
		return schemas.TypedValue{}, false, nil
	}
	st, err := parent(head)
	if errors.Is(err, state.ErrNotFound) {
		return schemas.TypedValue{}, false, nil
	}
	if err != nil {
		return schemas.TypedValue{}, false, err
	}
	v, ok := st.Outputs[tail]
	return v, ok, nil
}
