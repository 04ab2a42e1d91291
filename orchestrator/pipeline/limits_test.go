package pipeline_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/orchestrator/pipeline"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// nested is a pipeline whose one step runs an inline pipeline, depth
// levels down to a pipeline of one Search step.
func nested(depth int) pipelinespec.PipelineSpec {
	spec := pipelinespec.PipelineSpec{Name: "leaf", Steps: []pipelinespec.PipelineStep{step("s", "Search")}}
	for i := range depth {
		inner := spec
		spec = pipelinespec.PipelineSpec{Name: "level-" + strconv.Itoa(depth-i-1), Steps: []pipelinespec.PipelineStep{
			{ID: "p", Kind: pipelinespec.StepKindPipeline, Pipeline: &pipelinespec.SubPipeline{Spec: &inner}}}}
	}
	return spec
}

// maxErrorBytes bounds the error of any refused spec below: it does not
// grow with the spec.
const maxErrorBytes = 120 << 10

// TestValidateNestingDepth: sub-pipelines nested 8 deep (the documented
// bound) are accepted; 9 and deeper are refused with limit_exceeded
// naming the limit and the depth, in an error whose length does not grow
// with the depth (it grew with its square: 846 KB at 200).
func TestValidateNestingDepth(t *testing.T) {
	if _, _, err := pipeline.Validate(nested(pipelinespec.MaxPipelineDepth), lookup, route.NewRouter()); err != nil {
		t.Fatalf("8 deep: %v", err)
	}
	var first int
	for _, d := range []int{9, 50, 200, 500} {
		_, _, err := pipeline.Validate(nested(d), lookup, route.NewRouter())
		if !errors.Is(err, schemas.ErrLimitExceeded) || !errors.Is(err, schemas.ErrInvalidPipeline) {
			t.Fatalf("%d deep: %v, want a limit error", d, err)
		}
		msg := err.Error()
		want := fmt.Sprintf("sub-pipeline nesting depth %d is over the limit of 8", d)
		if !strings.Contains(msg, want) || strings.Count(msg, "nesting depth") != 1 {
			t.Errorf("%d deep: %q, want it once: %q", d, msg, want)
		}
		if first == 0 {
			first = len(msg)
		}
		if len(msg) > first+10 { // only the digits of the depth differ
			t.Errorf("%d deep: error of %d bytes, 9 deep had %d", d, len(msg), first)
		}
	}
}

// TestValidateCostIsLinear: what Validate allocates grows linearly with
// the depth of a refused spec and with the steps of an accepted one
// (allocations, not time: the machine may be busy).
func TestValidateCostIsLinear(t *testing.T) {
	allocs := func(spec pipelinespec.PipelineSpec) float64 {
		r := route.NewRouter()
		return testing.AllocsPerRun(3, func() { _, _, _ = pipeline.Validate(spec, lookup, r) })
	}
	if a, b := allocs(nested(100)), allocs(nested(800)); b > 12*a {
		t.Errorf("refusing 800 deep allocates %.0f, 100 deep %.0f: more than linear", b, a)
	}
	wide := func(n int) pipelinespec.PipelineSpec {
		spec := pipelinespec.PipelineSpec{Name: "wide"}
		for i := range n {
			child := nested(3)
			spec.Steps = append(spec.Steps, pipelinespec.PipelineStep{ID: "p" + strconv.Itoa(i), Kind: pipelinespec.StepKindPipeline,
				Pipeline: &pipelinespec.SubPipeline{Spec: &child}})
		}
		return spec
	}
	if a, b := allocs(wide(50)), allocs(wide(400)); b > 12*a {
		t.Errorf("400 sub-pipelines allocate %.0f, 50 allocate %.0f: more than linear", b, a)
	}
}

// limitCase is a spec at a limit and one past it, and what the refusal
// names.
type limitCase struct {
	name     string
	at, past pipelinespec.PipelineSpec
	names    string // the limit, as the error names it
	value    int    // the value past it
}

// limitCases are specs at and just past each limit of lim.
func limitCases(lim pipelinespec.Limits) []limitCase {
	chain := func(n int) pipelinespec.PipelineSpec {
		spec := pipelinespec.PipelineSpec{Name: "chain", Steps: []pipelinespec.PipelineStep{step("s0", "Search")}}
		for i := 1; i < n; i++ {
			spec.Steps = append(spec.Steps, step("s"+strconv.Itoa(i), "Variant", "s"+strconv.Itoa(i-1)))
		}
		return spec
	}
	forEach := func(items, parallel int) pipelinespec.PipelineSpec {
		list := make([]any, items)
		for i := range list {
			list[i] = "item " + strconv.Itoa(i)
		}
		return pipelinespec.PipelineSpec{Name: "each", Vars: map[string]any{"items": list}, Steps: []pipelinespec.PipelineStep{{
			ID: "e", Kind: pipelinespec.StepKindForEach, Agent: "Text", ForEach: &pipelinespec.ForEachSpec{Items: "vars.items", Parallel: parallel}}}}
	}
	repeat := func(n int) pipelinespec.PipelineSpec {
		return pipelinespec.PipelineSpec{Name: "again", Steps: []pipelinespec.PipelineStep{{
			ID: "r", Kind: pipelinespec.StepKindRepeat, Agent: "Text", Inputs: map[string]string{"text": "text:x"},
			Repeat: &pipelinespec.RepeatSpec{Until: "iteration > 1", MaxIterations: n}}}}
	}
	seeded := func(n int) pipelinespec.PipelineSpec {
		spec := chain(1)
		spec.Seed.Values = map[string]pipelinespec.SeedValue{"note": {DataType: schemas.TypeText, Value: strings.Repeat("x", n-2)}} // 2 quotes
		return spec
	}
	sized := func(n int) pipelinespec.PipelineSpec { // n bytes of JSON
		spec := chain(1)
		spec.Name = ""
		b, _ := json.Marshal(spec)
		spec.Name = strings.Repeat("n", n-len(b)-len(`"name":"",`))
		return spec
	}
	return []limitCase{
		{"steps", chain(lim.Steps), chain(lim.Steps + 1), "number of steps", lim.Steps + 1},
		{"depth", nested(lim.Depth), nested(lim.Depth + 1), "sub-pipeline nesting depth", lim.Depth + 1},
		{"for_each items", forEach(lim.ForEachItems, 1), forEach(lim.ForEachItems+1, 1), "items of for_each.items vars.items", lim.ForEachItems + 1},
		{"for_each parallel", forEach(2, lim.ForEachParallel), forEach(2, lim.ForEachParallel+1), "for_each.parallel", lim.ForEachParallel + 1},
		{"repeat iterations", repeat(lim.RepeatIterations), repeat(lim.RepeatIterations + 1), "repeat.max_iterations", lim.RepeatIterations + 1},
		{"seed value bytes", seeded(lim.SeedValueBytes), seeded(lim.SeedValueBytes + 1), "seed.values.note: size in bytes", lim.SeedValueBytes + 1},
		{"spec bytes", sized(lim.SpecBytes), sized(lim.SpecBytes + 1), "pipeline spec size in bytes", lim.SpecBytes + 1},
	}
}

// TestLimitsAtAndPast: for the default limits and for lower ones, a spec
// at each limit passes it, and one just past is refused with
// limit_exceeded naming the limit, the value and the bound, in a bounded
// error.
func TestLimitsAtAndPast(t *testing.T) {
	live["Text"] = schemas.AgentContract{Name: "Text", Capability: schemas.CapTransformation, Description: "t",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}}
	t.Cleanup(func() { delete(live, "Text") })
	for _, lim := range []pipelinespec.Limits{
		{Steps: 12, Depth: 3, ForEachItems: 20, ForEachParallel: 5, RepeatIterations: 7, SeedValueBytes: 300, SpecBytes: 4000},
		pipelinespec.Limits{}.OrDefaults(),
	} {
		for _, c := range limitCases(lim) {
			t.Run(fmt.Sprintf("%s=%d", c.name, c.value-1), func(t *testing.T) {
				if _, _, err := pipeline.ValidateWithin(c.at, lookup, route.NewRouter(), lim); errors.Is(err, schemas.ErrLimitExceeded) {
					t.Fatalf("at the limit: %v", err)
				}
				_, _, err := pipeline.ValidateWithin(c.past, lookup, route.NewRouter(), lim)
				if !errors.Is(err, schemas.ErrLimitExceeded) {
					t.Fatalf("past the limit: %v", err)
				}
				var le *schemas.LimitError
				if !errors.As(err, &le) || le.Value != c.value || le.Max != c.value-1 {
					t.Fatalf("past the limit: %v, want value %d and limit %d", err, c.value, c.value-1)
				}
				want := fmt.Sprintf("%d is over the limit of %d", c.value, c.value-1)
				if msg := err.Error(); !strings.Contains(msg, c.names) || !strings.Contains(msg, want) || !strings.Contains(msg, "raise") || len(msg) > maxErrorBytes {
					t.Errorf("error (%d bytes) %q, want %q and %q", len(msg), schemas.Clip(msg, 500), c.names, want)
				}
			})
		}
	}
}

// FuzzValidateLimits builds specs of fuzzed shape (depth, width, steps,
// loop bounds) near and past the limits: validation never panics, a spec
// past one is refused with limit_exceeded, and the error stays bounded.
func FuzzValidateLimits(f *testing.F) {
	f.Add(uint16(8), uint16(1), uint16(1), uint16(4), uint16(10))
	f.Add(uint16(9), uint16(3), uint16(2), uint16(65), uint16(101))
	f.Add(uint16(300), uint16(1), uint16(40), uint16(0), uint16(0))
	lim := pipelinespec.Limits{Steps: 60, Depth: 4, ForEachParallel: 8, RepeatIterations: 9}.OrDefaults()
	f.Fuzz(func(t *testing.T, depth, width, steps, parallel, iterations uint16) {
		depth, width, steps = depth%600, width%6+1, steps%80+1
		spec := nested(int(depth))
		for i := range int(width) - 1 {
			child := nested(int(depth) / (i + 2))
			spec.Steps = append(spec.Steps, pipelinespec.PipelineStep{ID: "w" + strconv.Itoa(i), Kind: pipelinespec.StepKindPipeline,
				Pipeline: &pipelinespec.SubPipeline{Spec: &child}})
		}
		for i := range int(steps) {
			spec.Steps = append(spec.Steps, step("c"+strconv.Itoa(i), "Search"))
		}
		spec.Steps = append(spec.Steps,
			pipelinespec.PipelineStep{ID: "e", Kind: pipelinespec.StepKindForEach, Agent: "Analyze", ForEach: &pipelinespec.ForEachSpec{Items: "c0.images", Parallel: int(parallel)}},
			pipelinespec.PipelineStep{ID: "r", Kind: pipelinespec.StepKindRepeat, Agent: "Search", Repeat: &pipelinespec.RepeatSpec{Until: "iteration > 1", MaxIterations: int(iterations)}})
		_, _, err := pipeline.ValidateWithin(spec, lookup, route.NewRouter(), lim)
		over := spec.Depth() > lim.Depth || spec.StepCount() > lim.Steps || int(parallel) > lim.ForEachParallel || int(iterations) > lim.RepeatIterations
		if over != errors.Is(err, schemas.ErrLimitExceeded) {
			t.Fatalf("depth %d, %d steps, parallel %d, iterations %d: over %v, error %v", spec.Depth(), spec.StepCount(), parallel, iterations, over, err)
		}
		if err != nil && len(err.Error()) > maxErrorBytes {
			t.Fatalf("error of %d bytes", len(err.Error()))
		}
	})
}
