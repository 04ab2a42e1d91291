package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentmesh/agentmesh/pipelinespec"
)

// PipelineBuilder builds a pipeline spec fluently. Step adds a step with no
// parents, Then adds a step after the current one, After adds parents to
// the current step; Param, Input and Timeout configure the current step:
//
//	spec, err := client.NewPipeline("sunsets").
//		SeedImages("img-1", "img-2").
//		Step("search", "ImageSearchAgent").Param("query", "sunset").
//		Then("analyze", "AnalysisAgent").
//		Then("organize", "OrganizerAgent").
//		Build()
//
// A diamond: Step("a", "A").Then("b", "B").Step("c", "C").After("a").
// Step("d", "D").After("b", "c").
type PipelineBuilder struct {
	spec pipelinespec.PipelineSpec
	cur  int // index of the current step, -1 before the first
	errs []error
}

// NewPipeline starts a pipeline called name.
func NewPipeline(name string) *PipelineBuilder {
	return &PipelineBuilder{spec: pipelinespec.PipelineSpec{Name: name}, cur: -1}
}

// SeedImages adds image file ids to the seed.
func (b *PipelineBuilder) SeedImages(ids ...string) *PipelineBuilder {
	b.spec.Seed.Images = append(b.spec.Seed.Images, ids...)
	return b
}

// SeedDocuments adds document file ids to the seed.
func (b *PipelineBuilder) SeedDocuments(ids ...string) *PipelineBuilder {
	b.spec.Seed.Documents = append(b.spec.Seed.Documents, ids...)
	return b
}

// SeedLinks adds link file ids to the seed.
func (b *PipelineBuilder) SeedLinks(ids ...string) *PipelineBuilder {
	b.spec.Seed.Links = append(b.spec.Seed.Links, ids...)
	return b
}

// SeedValue adds a typed seed value of any data type under name; a step
// input maps to it with "seed.<name>".
func (b *PipelineBuilder) SeedValue(name, dataType, hint string, value any) *PipelineBuilder {
	if b.spec.Seed.Values == nil {
		b.spec.Seed.Values = map[string]pipelinespec.SeedValue{}
	}
	b.spec.Seed.Values[name] = pipelinespec.SeedValue{DataType: dataType, ContentTypeHint: hint, Value: value}
	return b
}

// Step adds a step with no parents and makes it current.
func (b *PipelineBuilder) Step(id, agent string) *PipelineBuilder {
	b.spec.Steps = append(b.spec.Steps, pipelinespec.PipelineStep{ID: id, Agent: agent})
	b.cur = len(b.spec.Steps) - 1
	return b
}

// Then adds a step that depends on the current step and makes it current.
func (b *PipelineBuilder) Then(id, agent string) *PipelineBuilder {
	if b.cur < 0 {
		b.errs = append(b.errs, fmt.Errorf("Then(%q): no step before it; start with Step", id))
		return b.Step(id, agent)
	}
	parent := b.spec.Steps[b.cur].ID
	b.Step(id, agent)
	b.spec.Steps[b.cur].DependsOn = []string{parent}
	return b
}

// After adds parents to the current step.
func (b *PipelineBuilder) After(parents ...string) *PipelineBuilder {
	if s := b.current("After"); s != nil {
		for _, p := range parents {
			if !contains(s.DependsOn, p) {
				s.DependsOn = append(s.DependsOn, p)
			}
		}
	}
	return b
}

// Param sets a free parameter of the current step.
func (b *PipelineBuilder) Param(name string, value any) *PipelineBuilder {
	if s := b.current("Param"); s != nil {
		if s.Params == nil {
			s.Params = map[string]any{}
		}
		s.Params[name] = value
	}
	return b
}

// Input maps an input of the current step's agent to a source:
// "seed.images", "seed.documents", "seed.links", "seed.<name>" (a seed
// value), "<step>.<output>",
// "state.<slot>", or "text:<literal>" for a TEXT input given in the spec.
func (b *PipelineBuilder) Input(name, source string) *PipelineBuilder {
	if s := b.current("Input"); s != nil {
		if s.Inputs == nil {
			s.Inputs = map[string]string{}
		}
		s.Inputs[name] = source
	}
	return b
}

// Timeout sets the current step's time budget.
func (b *PipelineBuilder) Timeout(d time.Duration) *PipelineBuilder {
	if s := b.current("Timeout"); s != nil {
		s.TimeoutMS = d.Milliseconds()
	}
	return b
}

// Version pins the current step's tasks to version v of its agent
// (docs/protocol.md, "Versions and rollouts"); Build checks v.
func (b *PipelineBuilder) Version(v string) *PipelineBuilder {
	if s := b.current("Version"); s != nil {
		s.Version = v
	}
	return b
}

func (b *PipelineBuilder) current(op string) *pipelinespec.PipelineStep {
	if b.cur < 0 {
		b.errs = append(b.errs, fmt.Errorf("%s: no current step; call Step first", op))
		return nil
	}
	return &b.spec.Steps[b.cur]
}

// Build returns the spec after its structural checks (ids, agent names,
// references, cycles). Checks that need the registry run when the
// pipeline is submitted, or with the orchestrator's pipeline.Validate.
func (b *PipelineBuilder) Build() (pipelinespec.PipelineSpec, error) {
	spec, err := NormalizeSpec(b.spec)
	errs := append([]error{}, b.errs...)
	if err != nil {
		errs = append(errs, err)
	}
	if err := spec.Validate(); err != nil {
		errs = append(errs, err)
	} else if _, err := pipelinespec.Waves(spec); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return spec, fmt.Errorf("%w: %w", ErrInvalidPipeline, errors.Join(errs...))
	}
	return spec, nil
}

// MustBuild is Build that panics on error; for tests and fixed pipelines.
func (b *PipelineBuilder) MustBuild() pipelinespec.PipelineSpec {
	spec, err := b.Build()
	if err != nil {
		panic(err)
	}
	return spec
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
