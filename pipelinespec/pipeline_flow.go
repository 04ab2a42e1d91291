package pipelinespec

import (
	"fmt"
	"maps"
	"slices"

	"github.com/agentmesh/agentmesh/schemas"
)

// StepKindRouter is the kind of a step that chooses one of its branches
// (steps that depend on it) and skips the others.
const StepKindRouter = "router"

// StepKindEvaluator is the kind of a step that has a model score an
// earlier output against criteria, recording an EVALUATION.
const StepKindEvaluator = "evaluator"

// EvaluateSpec is what an evaluator step scores: the value at Output (a
// source as step inputs name them: "<step>.<output>", "state.<slot>" or
// "seed.<name>") against Criteria.
type EvaluateSpec struct {
	Output   string `json:"output" yaml:"output"`
	Criteria string `json:"criteria" yaml:"criteria"`
}

// RouterSpec is what a router step chooses from. With a model the
// orchestrator asks it to pick a branch by name (Prompt, the branches'
// descriptions and the run's state); without one, or when the model names
// no branch, the first branch whose When holds is chosen, else Default.
// No branch chosen skips them all.
type RouterSpec struct {
	Prompt   string         `json:"prompt,omitempty" yaml:"prompt"`
	Branches []RouterBranch `json:"branches" yaml:"branches"`
	Default  string         `json:"default,omitempty" yaml:"default"`
}

// RouterBranch is one branch of a router: a step that depends on the
// router, the rule that chooses it without a model, and what it is for
// (told to the model).
type RouterBranch struct {
	Step        string `json:"step" yaml:"step"`
	When        string `json:"when,omitempty" yaml:"when"`
	Description string `json:"description,omitempty" yaml:"description"`
}

// Names of the branch steps, in order.
func (r RouterSpec) Names() []string {
	out := make([]string, len(r.Branches))
	for i, b := range r.Branches {
		out[i] = b.Step
	}
	return out
}

// validateFlow checks the shape of the vars and of router steps: names,
// branches that are steps depending on their router, a default among them.
// Conditions are compiled by the orchestrator, which knows the run's
// variables and steps.
func (p PipelineSpec) validateFlow(ids map[string]bool) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(p.Vars)) {
		if !schemas.IsSlotName(name) {
			errs = append(errs, fmt.Errorf("vars: name %q must start with a letter or '_' and hold only letters, digits and '_'", name))
		}
	}
	deps := map[string][]string{}
	for _, s := range p.Steps {
		deps[s.ID] = s.DependsOn
	}
	for _, s := range p.Steps {
		errs = append(errs, s.validateEvaluate()...)
		if s.Kind != StepKindRouter {
			if s.Router != nil {
				errs = append(errs, fmt.Errorf("step %q: router is set but the step's kind is %q; set kind: %s or remove router", s.ID, s.Kind, StepKindRouter))
			}
			continue
		}
		if s.Agent != "" {
			errs = append(errs, fmt.Errorf("step %q: a router runs no agent; remove agent %q", s.ID, s.Agent))
		}
		if s.Router == nil || len(s.Router.Branches) == 0 {
			errs = append(errs, fmt.Errorf("step %q: a router needs router.branches: the steps it chooses from", s.ID))
			continue
		}
		seen := map[string]bool{}
		for i, b := range s.Router.Branches {
			switch {
			case !ids[b.Step]:
				errs = append(errs, fmt.Errorf("step %q: router.branches[%d] names step %q, which is not a step of this pipeline", s.ID, i, b.Step))
			case seen[b.Step]:
				errs = append(errs, fmt.Errorf("step %q: router.branches[%d] names step %q twice", s.ID, i, b.Step))
			case !slices.Contains(deps[b.Step], s.ID):
				errs = append(errs, fmt.Errorf("step %q: branch %q must depend on the router; add %q to its depends_on", s.ID, b.Step, s.ID))
			}
			seen[b.Step] = true
		}
		if d := s.Router.Default; d != "" && !seen[d] {
			errs = append(errs, fmt.Errorf("step %q: router.default %q is not one of its branches (%v)", s.ID, d, s.Router.Names()))
		}
	}
	return errs
}

// validateEvaluate checks the shape of an evaluator step.
func (s PipelineStep) validateEvaluate() []error {
	if s.Kind != StepKindEvaluator {
		if s.Evaluate != nil {
			return []error{fmt.Errorf("step %q: evaluate is set but the step's kind is %q; set kind: %s or remove evaluate", s.ID, s.Kind, StepKindEvaluator)}
		}
		return nil
	}
	var errs []error
	if s.Agent != "" {
		errs = append(errs, fmt.Errorf("step %q: an evaluator runs no agent; remove agent %q", s.ID, s.Agent))
	}
	if s.Evaluate == nil || s.Evaluate.Output == "" || s.Evaluate.Criteria == "" {
		errs = append(errs, fmt.Errorf("step %q: an evaluator needs evaluate.output (e.g. draft.text) and evaluate.criteria", s.ID))
	}
	return errs
}
