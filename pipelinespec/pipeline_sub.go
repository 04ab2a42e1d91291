package pipelinespec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// StepKindPipeline is the kind of a step that runs another pipeline as a
// child run and ends as it ends (see docs/workflows.md).
const StepKindPipeline = "pipeline"

// MaxPipelineDepth bounds how deep sub-pipelines nest below a pipeline by
// default: a pipeline whose steps run pipelines whose steps run pipelines
// ... 8 levels below it is accepted, 9 is not (Limits.Depth).
const MaxPipelineDepth = 8

// SubPipeline is the pipeline a step of kind pipeline runs: by Name (a
// spec the orchestrator finds in its pipelines directory), by File (a
// path the client reads, relative to the file of the pipeline naming it)
// or inline (Spec). Name and File are resolved into Spec before the run
// starts, so every replica runs the same child. Inputs maps a seed value
// of the child (a name under its seed.values) to a source of this run;
// Outputs maps an output of the step to "<child step>.<output>" (none: the
// outputs of the child's last steps).
type SubPipeline struct {
	Name    string            `json:"name,omitempty" yaml:"name"`
	File    string            `json:"file,omitempty" yaml:"file"`
	Spec    *PipelineSpec     `json:"spec,omitempty" yaml:"spec"`
	Inputs  map[string]string `json:"inputs,omitempty" yaml:"inputs"`
	Outputs map[string]string `json:"outputs,omitempty" yaml:"outputs"`
}

// Ref names the child for messages: its name, file, or spec name.
func (p *SubPipeline) Ref() string {
	switch {
	case p.Name != "":
		return p.Name
	case p.File != "":
		return p.File
	case p.Spec != nil && p.Spec.Name != "":
		return p.Spec.Name
	}
	return "(inline)"
}

// validateSub checks the shape of a step of kind pipeline, or of a
// for_each that runs a pipeline per item; an inline child's own shape is
// checked too.
func (s PipelineStep) validateSub() []error {
	forEach := s.Kind == StepKindForEach && s.Pipeline != nil // runs the pipeline per item
	if s.Kind != StepKindPipeline && !forEach {
		if s.Pipeline != nil {
			return []error{fmt.Errorf("step %q: pipeline is set but the step's kind is %q; set kind: %s (or %s) or remove pipeline", s.ID, s.Kind, StepKindPipeline, StepKindForEach)}
		}
		return nil
	}
	var errs []error
	if s.Agent != "" {
		errs = append(errs, fmt.Errorf("step %q: a step that runs a pipeline runs no agent; remove agent %q or pipeline", s.ID, s.Agent))
	}
	p := s.Pipeline
	if p == nil || p.Name == "" && p.File == "" && p.Spec == nil {
		return append(errs, fmt.Errorf("step %q: a step of kind pipeline needs pipeline.name, pipeline.file or pipeline.spec", s.ID))
	}
	if p.Name != "" && p.File != "" {
		errs = append(errs, fmt.Errorf("step %q: pipeline names both name %q and file %q; give one", s.ID, p.Name, p.File))
	}
	if p.Name != "" && !schemas.IsAgentName(p.Name) {
		errs = append(errs, fmt.Errorf("step %q: pipeline.name %q must be 1 to 64 letters, digits, '-' or '_' (the file <name>.yaml in the orchestrator's pipelines directory)", s.ID, p.Name))
	}
	for name, src := range p.Outputs {
		if step, out, ok := strings.Cut(src, "."); !ok || step == "" || out == "" {
			errs = append(errs, fmt.Errorf("step %q: pipeline.outputs.%s %q must be <child step>.<output>", s.ID, name, src))
		}
	}
	if p.Spec != nil {
		// Its depth and limits are checked once, at the top (ValidateWithin).
		if cerrs := p.Spec.validate(); len(cerrs) > 0 {
			errs = append(errs, fmt.Errorf("step %q: pipeline.spec: %w", s.ID, fmt.Errorf("%w: %w", schemas.ErrInvalidPipeline, errors.Join(cerrs...))))
		}
	}
	return errs
}
