package pipelinespec

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/agentmesh/agentmesh/schemas"
)

// Default limits of a pipeline spec (see Limits). The loop bounds are
// MaxLoopItems, MaxLoopParallel and MaxLoopIterations, the nesting bound
// MaxPipelineDepth.
const (
	DefaultMaxSpecBytes      = 768 << 10 // the spec is kept in one KV value (at most 1 MiB)
	DefaultMaxSteps          = 10_000
	DefaultMaxSeedValueBytes = 256 << 10
)

// Limits bound what one pipeline spec may ask of the mesh. Each is checked
// when the spec is submitted, before anything else is, and a spec over one
// is refused with a *schemas.LimitError (code limit_exceeded). A zero field takes
// its default; docs/workflows.md lists them with the orchestrator flags
// that set them.
type Limits struct {
	SpecBytes        int // the spec as JSON, sub-pipelines included (DefaultMaxSpecBytes)
	Steps            int // steps, those of sub-pipelines included (DefaultMaxSteps)
	Depth            int // how deep sub-pipelines nest below the pipeline (MaxPipelineDepth)
	ForEachItems     int // items of one for_each (MaxLoopItems)
	ForEachParallel  int // a for_each's parallel (MaxLoopParallel)
	RepeatIterations int // a repeat's max_iterations (MaxLoopIterations)
	SeedValueBytes   int // one seed value or variable as JSON (DefaultMaxSeedValueBytes)
}

// OrDefaults returns l with each zero field set to its default.
func (l Limits) OrDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.SpecBytes, DefaultMaxSpecBytes)
	def(&l.Steps, DefaultMaxSteps)
	def(&l.Depth, MaxPipelineDepth)
	def(&l.ForEachItems, MaxLoopItems)
	def(&l.ForEachParallel, MaxLoopParallel)
	def(&l.RepeatIterations, MaxLoopIterations)
	def(&l.SeedValueBytes, DefaultMaxSeedValueBytes)
	return l
}

// Depth is how deep the inline sub-pipelines of p nest below it: 0 for a
// pipeline without any. It visits each step once.
func (p PipelineSpec) Depth() int {
	d := 0
	for _, s := range p.Steps {
		if s.Pipeline != nil && s.Pipeline.Spec != nil {
			d = max(d, 1+s.Pipeline.Spec.Depth())
		}
	}
	return d
}

// StepCount is the number of steps of p, those of its inline sub-pipelines
// included.
func (p PipelineSpec) StepCount() int {
	n := len(p.Steps)
	for _, s := range p.Steps {
		if s.Pipeline != nil && s.Pipeline.Spec != nil {
			n += s.Pipeline.Spec.StepCount()
		}
	}
	return n
}

// CheckLimits checks p against l (zero fields: the defaults) and returns
// every limit it is over, as *schemas.LimitError values joined, or nil. The
// nesting depth is checked first and alone: a spec nested deeper than
// l.Depth is not looked into further. Its cost is linear in the size of p.
func (p PipelineSpec) CheckLimits(l Limits) error {
	l = l.OrDefaults()
	if d := p.Depth(); d > l.Depth {
		return &schemas.LimitError{Limit: "sub-pipeline nesting depth", Value: d, Max: l.Depth,
			Hint: "flatten the pipeline (run the inner pipelines as steps of an outer one), or raise the orchestrator's --max-pipeline-depth"}
	}
	var errs []error
	if n := p.StepCount(); n > l.Steps {
		errs = append(errs, &schemas.LimitError{Limit: "number of steps (sub-pipelines included)", Value: n, Max: l.Steps,
			Hint: "split the pipeline, or raise the orchestrator's --max-pipeline-steps"})
	}
	if b, err := json.Marshal(p); err == nil && len(b) > l.SpecBytes {
		errs = append(errs, &schemas.LimitError{Limit: "pipeline spec size in bytes (as JSON)", Value: len(b), Max: l.SpecBytes,
			Hint: "put large values in files (agentmesh files put) and pass their ids, or raise the orchestrator's --max-spec-bytes"})
	}
	errs = append(errs, p.checkLimits(l)...)
	return errors.Join(errs...)
}

// checkLimits checks the loops, seed values and vars of p and of its
// inline sub-pipelines.
func (p PipelineSpec) checkLimits(l Limits) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(p.Seed.Values)) {
		if b, err := json.Marshal(p.Seed.Values[name].Value); err == nil && len(b) > l.SeedValueBytes {
			errs = append(errs, &schemas.LimitError{Limit: fmt.Sprintf("seed.values.%s: size in bytes (as JSON)", name), Value: len(b), Max: l.SeedValueBytes,
				Hint: "put large content in files (agentmesh files put) and pass their ids, or raise the orchestrator's --max-seed-value-bytes"})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Vars)) {
		if b, err := json.Marshal(p.Vars[name]); err == nil && len(b) > l.SeedValueBytes {
			errs = append(errs, &schemas.LimitError{Limit: fmt.Sprintf("vars.%s: size in bytes (as JSON)", name), Value: len(b), Max: l.SeedValueBytes,
				Hint: "put large content in files (agentmesh files put) and pass their ids, or raise the orchestrator's --max-seed-value-bytes"})
		}
	}
	for _, s := range p.Steps {
		if f := s.ForEach; f != nil && f.Parallel > l.ForEachParallel {
			errs = append(errs, &schemas.LimitError{Limit: fmt.Sprintf("step %q: for_each.parallel", s.ID), Value: f.Parallel, Max: l.ForEachParallel,
				Hint: "run fewer items at once, or raise the orchestrator's --max-foreach-parallel"})
		}
		if r := s.Repeat; r != nil && r.MaxIterations > l.RepeatIterations {
			errs = append(errs, &schemas.LimitError{Limit: fmt.Sprintf("step %q: repeat.max_iterations", s.ID), Value: r.MaxIterations, Max: l.RepeatIterations,
				Hint: "give a lower bound, or raise the orchestrator's --max-repeat-iterations"})
		}
		if s.Pipeline != nil && s.Pipeline.Spec != nil {
			errs = append(errs, s.Pipeline.Spec.checkLimits(l)...)
		}
	}
	return errs
}

// ItemsOverLimit is the error of a for_each of n items, over max.
func ItemsOverLimit(step, src string, n, max int) error {
	return &schemas.LimitError{Limit: fmt.Sprintf("step %q: items of for_each.items %s", step, src), Value: n, Max: max,
		Hint: "split the collection, or raise the orchestrator's --max-foreach-items"}
}
