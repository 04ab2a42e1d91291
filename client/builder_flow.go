package client

import (
	"strings"

	"github.com/agentmesh/agentmesh/pipelinespec"
)

// Var declares a workflow variable with its default value (nil: it must be
// given at submit, see SetVars). Params read it as "${vars.<name>}",
// conditions as vars.<name>.
func (b *PipelineBuilder) Var(name string, value any) *PipelineBuilder {
	if b.spec.Vars == nil {
		b.spec.Vars = map[string]any{}
	}
	b.spec.Vars[name] = value
	return b
}

// When sets the current step's condition: an expr-lang expression over
// vars, slots and earlier steps that, false when the step starts, skips the
// step and its dependants (see docs/workflows.md).
func (b *PipelineBuilder) When(condition string) *PipelineBuilder {
	if s := b.current("When"); s != nil {
		s.When = condition
	}
	return b
}

// Router adds a router step with no parents and makes it current: it
// chooses one of branches (steps that must depend on it), falling back to
// def ("" for none), and the others are skipped.
func (b *PipelineBuilder) Router(id, def string, branches ...pipelinespec.RouterBranch) *PipelineBuilder {
	b.spec.Steps = append(b.spec.Steps, pipelinespec.PipelineStep{ID: id, Kind: pipelinespec.StepKindRouter,
		Router: &pipelinespec.RouterSpec{Branches: branches, Default: def}})
	b.cur = len(b.spec.Steps) - 1
	return b
}

// RouterPrompt sets what the model is asked when the current router step
// chooses its branch with a model.
func (b *PipelineBuilder) RouterPrompt(prompt string) *PipelineBuilder {
	if s := b.current("RouterPrompt"); s != nil && s.Router != nil {
		s.Router.Prompt = prompt
	}
	return b
}

// Evaluator adds a step that has the orchestrator's model score the value
// at output ("<step>.<output>", "state.<slot>" or "seed.<name>") against
// criteria, and makes it current; it depends on the step output names.
// Conditions read the score as steps.<id>.outputs.evaluation.score.
func (b *PipelineBuilder) Evaluator(id, output, criteria string) *PipelineBuilder {
	step := pipelinespec.PipelineStep{ID: id, Kind: pipelinespec.StepKindEvaluator, Evaluate: &pipelinespec.EvaluateSpec{Output: output, Criteria: criteria}}
	if head, _, ok := strings.Cut(output, "."); ok && head != "seed" && head != "state" {
		step.DependsOn = []string{head}
	}
	b.spec.Steps = append(b.spec.Steps, step)
	b.cur = len(b.spec.Steps) - 1
	return b
}

// ForEach makes the current step a for_each: its agent runs once per item
// of items ("seed.<name>", "state.<slot>", "<step>.<output>" or
// "vars.<name>"), parallel at a time (0: the default), and the items'
// outputs are merged (see docs/workflows.md). The items go to the agent's
// one required input, or to the one ItemInput names.
func (b *PipelineBuilder) ForEach(items string, parallel int) *PipelineBuilder {
	if s := b.current("ForEach"); s != nil {
		s.Kind, s.ForEach = pipelinespec.StepKindForEach, &pipelinespec.ForEachSpec{Items: items, Parallel: parallel}
	}
	return b
}

// ItemInput names the input of the current for_each step's agent that
// each item is given as.
func (b *PipelineBuilder) ItemInput(name string) *PipelineBuilder {
	if s := b.current("ItemInput"); s != nil && s.ForEach != nil {
		s.ForEach.Input = name
	}
	return b
}

// RepeatUntil makes the current step a repeat: its agent runs again, fed
// its previous outputs, until the condition until holds (it reads
// output.<name> and iteration besides what when reads) or max iterations
// ran.
func (b *PipelineBuilder) RepeatUntil(until string, max int) *PipelineBuilder {
	if s := b.current("RepeatUntil"); s != nil {
		s.Kind, s.Repeat = pipelinespec.StepKindRepeat, &pipelinespec.RepeatSpec{Until: until, MaxIterations: max}
	}
	return b
}

// Pipeline adds a step with no parents that runs the pipeline the
// orchestrator finds by name in its pipelines directory, and makes it
// current; MapIn and MapOut map its inputs and outputs.
func (b *PipelineBuilder) Pipeline(id, name string) *PipelineBuilder {
	return b.sub(id, &pipelinespec.SubPipeline{Name: name})
}

// SubPipeline adds a step with no parents that runs spec as a child run,
// and makes it current; MapIn and MapOut map its inputs and outputs.
func (b *PipelineBuilder) SubPipeline(id string, spec pipelinespec.PipelineSpec) *PipelineBuilder {
	return b.sub(id, &pipelinespec.SubPipeline{Spec: &spec})
}

func (b *PipelineBuilder) sub(id string, p *pipelinespec.SubPipeline) *PipelineBuilder {
	b.spec.Steps = append(b.spec.Steps, pipelinespec.PipelineStep{ID: id, Kind: pipelinespec.StepKindPipeline, Pipeline: p})
	b.cur = len(b.spec.Steps) - 1
	return b
}

// MapIn gives the current pipeline step's child the value at source (as
// step inputs name sources) as its seed value seed.
func (b *PipelineBuilder) MapIn(seed, source string) *PipelineBuilder {
	if s := b.current("MapIn"); s != nil && s.Pipeline != nil {
		if s.Pipeline.Inputs == nil {
			s.Pipeline.Inputs = map[string]string{}
		}
		s.Pipeline.Inputs[seed] = source
	}
	return b
}

// MapOut makes output "<child step>.<output>" of the current pipeline
// step's child the step's output name.
func (b *PipelineBuilder) MapOut(name, childOutput string) *PipelineBuilder {
	if s := b.current("MapOut"); s != nil && s.Pipeline != nil {
		if s.Pipeline.Outputs == nil {
			s.Pipeline.Outputs = map[string]string{}
		}
		s.Pipeline.Outputs[name] = childOutput
	}
	return b
}
