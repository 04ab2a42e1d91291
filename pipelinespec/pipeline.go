package pipelinespec

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// PipelineSpec declares a pipeline: steps wired by depends_on, each calling
// one agent, plus seed file IDs. It is written as YAML or JSON, built with
// the orchestrator's builder, or submitted as io.agentmesh.pipeline.submitted.
type PipelineSpec struct {
	Name  string         `json:"name,omitempty" yaml:"name"`
	Steps []PipelineStep `json:"steps" yaml:"steps"`
	Seed  PipelineSeed   `json:"seed,omitzero" yaml:"seed"`
	// Vars are the workflow's variables by name with their values: the
	// spec's defaults, replaced at submit (see docs/workflows.md). Params
	// read one as "${vars.<name>}", conditions as vars.<name>; a null value
	// must be given at submit.
	Vars map[string]any `json:"vars,omitempty" yaml:"vars"`
	// Budget limits the tokens and dollars of the run's model calls; when
	// a wave ends with it reached, no further step starts and the run
	// fails with code budget_exceeded.
	Budget *schemas.Budget `json:"budget,omitempty" yaml:"budget"`
	// Schedule runs the pipeline by itself, on a cron, at an interval or
	// once at a time, once it is added with `agentmesh schedule add`
	// (docs/protocol.md, "Schedules"). A submission ignores it.
	Schedule *Schedule `json:"schedule,omitempty" yaml:"schedule"`
}

// PipelineStep is one node of a pipeline. Inputs maps an input name of the
// agent's contract to a source: "seed.images", "seed.documents",
// "seed.links", "<step>.<output>", "state.<slot>" or "text:<literal>" (a TEXT
// input given in place). Inputs left unmapped are
// filled from the parents' outputs by data type and content hint.
type PipelineStep struct {
	ID string `json:"id" yaml:"id"`
	// Kind says how the step runs; empty is "agent", one task of Agent.
	// "approval" and "input" wait for a person (see Human).
	Kind  string `json:"kind,omitempty" yaml:"kind"`
	Agent string `json:"agent,omitempty" yaml:"agent"`
	// Version pins the step's tasks to that version of Agent: they go to
	// mesh.task.<agent>.v.<version>, whatever a rollout says
	// (docs/protocol.md, "Versions and rollouts").
	Version   string            `json:"version,omitempty" yaml:"version"`
	Params    map[string]any    `json:"params,omitempty" yaml:"params"`
	DependsOn []string          `json:"depends_on,omitempty" yaml:"depends_on"`
	Inputs    map[string]string `json:"inputs,omitempty" yaml:"inputs"`
	TimeoutMS int64             `json:"timeout_ms,omitempty" yaml:"timeout_ms"`
	// When is a condition over the run's vars, slots and earlier steps
	// (see docs/workflows.md): false when the step starts, the step and its
	// dependants are skipped.
	When string `json:"when,omitempty" yaml:"when"`
	// Router is the branches of a step of kind router.
	Router *RouterSpec `json:"router,omitempty" yaml:"router"`
	// Evaluate is what a step of kind evaluator scores.
	Evaluate *EvaluateSpec `json:"evaluate,omitempty" yaml:"evaluate"`
	// Human is what a step of kind approval or input asks a person.
	Human *HumanStep `json:"human,omitempty" yaml:"human"`
	// ForEach is what a step of kind for_each iterates over.
	ForEach *ForEachSpec `json:"for_each,omitempty" yaml:"for_each"`
	// Repeat is how a step of kind repeat ends.
	Repeat *RepeatSpec `json:"repeat,omitempty" yaml:"repeat"`
	// Pipeline is the pipeline a step of kind pipeline runs.
	Pipeline *SubPipeline `json:"pipeline,omitempty" yaml:"pipeline"`
}

// PipelineSeed holds what a run starts with: file IDs of images, documents
// and links, and typed values of any data type by name. Each seed fills the
// slot its data type and hint route to, and a step input maps to one with
// "seed.images", "seed.documents", "seed.links" or "seed.<name>".
type PipelineSeed struct {
	Images    []string             `json:"images,omitempty" yaml:"images"`
	Documents []string             `json:"documents,omitempty" yaml:"documents"`
	Links     []string             `json:"links,omitempty" yaml:"links"`
	Values    map[string]SeedValue `json:"values,omitempty" yaml:"values"`
}

// SeedValue is a typed value written in a pipeline spec: a data type, a
// content hint and the value as plain JSON (or YAML). The orchestrator
// checks the value against its data type's schema before the run starts.
type SeedValue struct {
	DataType        string `json:"data_type" yaml:"data_type"`
	ContentTypeHint string `json:"content_type_hint,omitempty" yaml:"content_type_hint"`
	Value           any    `json:"value" yaml:"value"`
}

// Typed returns the seed as a schemas.TypedValue from source.
func (s SeedValue) Typed(source string) (schemas.TypedValue, error) {
	raw, err := json.Marshal(s.Value)
	if err != nil {
		return schemas.TypedValue{}, fmt.Errorf("%w: %s seed value cannot be encoded as JSON: %v", schemas.ErrInvalidValue, s.DataType, err)
	}
	return schemas.TypedValue{DataType: s.DataType, ContentTypeHint: s.ContentTypeHint, Value: raw, Source: source}, nil
}

// reservedSeeds are the seed names that hold file IDs, not values.
var reservedSeeds = []string{"images", "documents", "links", "values"}

// Validate checks the spec's shape (ids, agent names, references to steps)
// and the default Limits; it does not know which agents are live or what
// they produce: the orchestrator checks that. Every problem is reported at
// once.
func (p PipelineSpec) Validate() error { return p.ValidateWithin(Limits{}) }

// ValidateWithin is Validate with the limits l (zero fields: the
// defaults). A spec nested deeper than l allows is reported with that one
// problem, and not looked into further. Its cost is linear in the size of
// the spec, and so is the length of its error.
func (p PipelineSpec) ValidateWithin(l Limits) error {
	var errs []error
	if err := p.CheckLimits(l); err != nil {
		if p.Depth() > l.OrDefaults().Depth {
			return fmt.Errorf("%w: %w", schemas.ErrInvalidPipeline, err)
		}
		errs = append(errs, err)
	}
	errs = append(errs, p.validate()...)
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", schemas.ErrInvalidPipeline, errors.Join(errs...))
}

// validate checks the shape of p and of its inline sub-pipelines, each
// once.
func (p PipelineSpec) validate() []error {
	var errs []error
	if len(p.Steps) == 0 {
		errs = append(errs, fmt.Errorf("pipeline %q has no steps; add at least one", p.Name))
	}
	if p.Schedule != nil {
		if err := p.Schedule.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("pipeline %q: %w", p.Name, err))
		}
	}
	if p.Budget != nil {
		if err := p.Budget.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("pipeline %q: %w", p.Name, err))
		}
	}
	ids := map[string]bool{}
	for i, s := range p.Steps {
		switch {
		case s.ID == "":
			errs = append(errs, fmt.Errorf("steps[%d]: id is empty", i))
		case !schemas.IsAgentName(s.ID):
			errs = append(errs, fmt.Errorf("steps[%d]: id %q must be 1 to 64 letters, digits, '-' or '_'", i, s.ID))
		case ids[s.ID]:
			errs = append(errs, fmt.Errorf("steps[%d]: duplicate step id %q", i, s.ID))
		}
		ids[s.ID] = true
		if s.Kind != "" && !slices.Contains(StepKinds, s.Kind) {
			errs = append(errs, fmt.Errorf("step %q: unknown kind %q; the kinds are: %s (the default)", s.ID, s.Kind, strings.Join(StepKinds, ", ")))
		}
		switch {
		case IsHumanKind(s.Kind):
			errs = append(errs, s.validateHuman()...)
		case s.Kind == "" || s.Kind == StepKindAgent:
			if err := schemas.ValidateAgentName(s.Agent); err != nil {
				errs = append(errs, fmt.Errorf("step %q: %w", s.ID, err))
			}
		}
		if s.Version != "" {
			if s.Agent == "" {
				errs = append(errs, fmt.Errorf("step %q: version %q pins the tasks of an agent, and the step names none", s.ID, s.Version))
			} else if _, err := schemas.VersionToken(s.Version); err != nil {
				errs = append(errs, fmt.Errorf("step %q (%s): %w", s.ID, s.Agent, err))
			}
		}
		errs = append(errs, s.validateLoop()...)
		errs = append(errs, s.validateSub()...)
		if s.TimeoutMS < 0 {
			errs = append(errs, fmt.Errorf("step %q: timeout_ms %d is negative", s.ID, s.TimeoutMS))
		}
	}
	errs = append(errs, p.Seed.validate()...)
	errs = append(errs, p.validateFlow(ids)...)
	for _, s := range p.Steps {
		for _, d := range s.DependsOn {
			if !ids[d] {
				errs = append(errs, fmt.Errorf("step %q depends on %q, which is not a step of this pipeline", s.ID, d))
			}
			if d == s.ID {
				errs = append(errs, fmt.Errorf("step %q depends on itself", s.ID))
			}
		}
	}
	return errs
}

// validate checks the seed values' names and shapes; their values are
// checked against their data types by the orchestrator, which knows the
// registered types.
func (s PipelineSeed) validate() []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s.Values)) {
		v := s.Values[name]
		switch {
		case !schemas.IsSlotName(name):
			errs = append(errs, fmt.Errorf("seed.values: name %q must start with a letter or '_' and hold only letters, digits and '_'", name))
		case slices.Contains(reservedSeeds, name):
			errs = append(errs, fmt.Errorf("seed.values: name %q is taken by seed.%s; pick another name", name, name))
		}
		if v.DataType == "" {
			errs = append(errs, fmt.Errorf("seed.values.%s: data_type is empty; give the value's data type, e.g. %s", name, schemas.TypeText))
		}
		if v.Value == nil {
			errs = append(errs, fmt.Errorf("seed.values.%s: value is missing", name))
		}
	}
	return errs
}

// StepKindAgent is the kind of a step that runs one task of its agent.
const StepKindAgent = "agent"

// StepKinds are the kinds a step may name, the default first.
var StepKinds = []string{StepKindAgent, StepKindRouter, StepKindEvaluator, StepKindApproval, StepKindInput, StepKindForEach, StepKindRepeat, StepKindPipeline}

// StepTaskID returns the id of a pipeline step's task:
// <run>-<step>-<attempt>-<tag>, where tag is schemas.TaskTag of the run's nonce
// (state.RunSpec.Nonce), or <run>-<step>-<attempt> for a run without one
// (runs stored before nonces). Every replica computes the same id, and it
// is also the JetStream Nats-Msg-Id of the task, so dispatching the same
// attempt twice runs it once; only who knows the nonce can compute it, so
// no one else can send a task under it first (docs/security.md).
func StepTaskID(runID, stepID string, attempt int, nonce string) string {
	return schemas.TaskTag(runID+"-"+stepID+"-"+strconv.Itoa(attempt), nonce)
}
