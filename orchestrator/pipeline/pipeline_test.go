package pipeline_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/pipelinespec"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/orchestrator/pipeline"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

// contracts of the agents "live" in the validation tests.
var live = map[string]schemas.AgentContract{
	"Search": {Name: "Search", Capability: schemas.CapSearch, Description: "s",
		Outputs: []schemas.TypedOutput{fixture.FilesOut("images", schemas.ContentImages, true)}},
	"Docs": {Name: "Docs", Capability: schemas.CapSearch, Description: "d",
		Outputs: []schemas.TypedOutput{fixture.FilesOut("docs", schemas.ContentDocuments, true)}},
	"Analyze": {Name: "Analyze", Capability: schemas.CapAnalysis, Description: "a",
		Inputs:  []schemas.TypedInput{fixture.FilesIn("images", schemas.ContentImages, true)},
		Outputs: []schemas.TypedOutput{{Name: "analysis", DataType: schemas.TypeAnalysisResult}, {Name: "categories", DataType: schemas.TypeCategorization, Mergeable: true}}},
	"Variant": {Name: "Variant", Capability: schemas.CapTransformation, Description: "v",
		Inputs:  []schemas.TypedInput{fixture.FilesIn("images", schemas.ContentImages, true)},
		Outputs: []schemas.TypedOutput{fixture.FilesOut("images", schemas.ContentImages, true)}},
	"VariantNM": {Name: "VariantNM", Capability: schemas.CapTransformation, Description: "v, not mergeable",
		Inputs:  []schemas.TypedInput{fixture.FilesIn("images", schemas.ContentImages, true)},
		Outputs: []schemas.TypedOutput{fixture.FilesOut("images", schemas.ContentImages, false)}},
	"Organize": {Name: "Organize", Capability: schemas.CapOrganization, Description: "o",
		Inputs:  []schemas.TypedInput{fixture.FilesIn("images", schemas.ContentImages, true), {Name: "categories", DataType: schemas.TypeCategorization, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "folders", DataType: schemas.TypeFolderResult}}},
	"Judge": {Name: "Judge", Capability: schemas.CapEvaluation, Description: "j",
		Inputs: []schemas.TypedInput{{Name: "analysis", DataType: schemas.TypeAnalysisResult, Required: true}}},
}

func lookup(a string) (schemas.AgentContract, bool) { c, ok := live[a]; return c, ok }

func step(id, agent string, deps ...string) pipelinespec.PipelineStep {
	return pipelinespec.PipelineStep{ID: id, Agent: agent, DependsOn: deps}
}

func TestValidatePipelineRejectsEachInvalidPipelineClearly(t *testing.T) {
	with := func(s pipelinespec.PipelineStep, in map[string]string) pipelinespec.PipelineStep {
		s.Inputs = in
		return s
	}
	cases := []struct {
		name  string
		spec  pipelinespec.PipelineSpec
		is    error
		wants []string
	}{
		{"no steps", pipelinespec.PipelineSpec{Name: "p"}, schemas.ErrInvalidPipeline, []string{"no steps"}},
		{"empty step id", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("", "Search")}}, schemas.ErrInvalidPipeline, []string{"id is empty"}},
		{"bad step id", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("a b", "Search")}}, schemas.ErrInvalidPipeline, []string{`"a b"`}},
		{"duplicate step id", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("s", "Search"), step("s", "Search")}}, schemas.ErrInvalidPipeline, []string{`duplicate step id "s"`}},
		{"unknown agent", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("s", "Ghost")}}, pipeline.ErrUnknownAgent, []string{`"Ghost"`, "no live instance", "agentmesh agent Ghost"}},
		{"unknown dependency", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("s", "Search", "nope")}}, schemas.ErrInvalidPipeline, []string{`"nope"`}},
		{"self dependency", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("s", "Search", "s")}}, schemas.ErrInvalidPipeline, []string{"depends on itself"}},
		{"cycle", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("s", "Search"), step("a", "Variant", "s", "b"), step("b", "Variant", "a")}},
			pipeline.ErrCycle, []string{"a -> b -> a"}},
		{"missing required input", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("a", "Analyze")}}, route.ErrMissingInput,
			[]string{`step "a" (Analyze)`, `"images"`, "FILE_IDS, images"}},
		{"second input missing", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("s", "Search"), step("o", "Organize", "s")}}, route.ErrMissingInput,
			[]string{`step "o" (Organize)`, `"categories"`, "CATEGORIZATION"}},
		{"non-mergeable type fan-in", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("s", "Search"), step("b", "Analyze", "s"), step("c", "Analyze", "s"), step("d", "Judge", "b", "c")}},
			pipeline.ErrFanIn, []string{`"b" and "c"`, "ANALYSIS_RESULT", "not mergeable"}},
		{"output not declared mergeable fan-in", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("s", "Search"), step("b", "VariantNM", "s"), step("c", "VariantNM", "s"), step("d", "Analyze", "b", "c")}},
			pipeline.ErrFanIn, []string{`"b" and "c"`, "FILE_IDS", "b.images", "not declared mergeable"}},
		{"input mapped to unknown input", pipelinespec.PipelineSpec{Seed: pipelinespec.PipelineSeed{Images: []string{"i"}}, Steps: []pipelinespec.PipelineStep{with(step("a", "Analyze"), map[string]string{"pictures": "seed.images"})}},
			pipeline.ErrBadInputSource, []string{`"pictures"`, "not an input of agent Analyze", "images"}},
		{"input mapped to empty seed", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{with(step("a", "Analyze"), map[string]string{"images": "seed.images"})}},
			route.ErrMissingInput, []string{"seed.images", "seed has no images"}},
		{"input mapped to a step that runs later", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("s", "Search"), with(step("a", "Analyze"), map[string]string{"images": "v.images"}), step("v", "Variant", "s")}},
			pipeline.ErrBadInputSource, []string{`step "v" does not run before`, "depends_on"}},
		{"input mapped to a missing output", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("s", "Search"), with(step("a", "Analyze", "s"), map[string]string{"images": "s.pics"})}},
			pipeline.ErrBadInputSource, []string{`no output "pics"`, "its outputs: images"}},
		{"input mapped to a bad source", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("s", "Search"), with(step("a", "Analyze", "s"), map[string]string{"images": "images"})}},
			pipeline.ErrBadInputSource, []string{`"images"`, "seed.images"}},
		{"text literal mapped to a FILE_IDS input", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{with(step("a", "Analyze"), map[string]string{"images": "text:sunsets"})}},
			pipeline.ErrBadInputSource, []string{`"images" is FILE_IDS`, `"text:sunsets" is a TEXT literal`}},
		{"input mapped to an empty state slot", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("s", "Docs"), with(step("a", "Analyze", "s"), map[string]string{"images": "state.current_image_ids"})}},
			pipeline.ErrBadInputSource, []string{`"current_image_ids"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := pipeline.Validate(c.spec, lookup, route.NewRouter())
			if err == nil {
				t.Fatal("valid, want an error")
			}
			if !errors.Is(err, pipeline.ErrInvalidPipeline) || !errors.Is(err, c.is) {
				t.Errorf("error %q does not match %v", err, c.is)
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestValidatePipelineReportsEveryProblemAtOnce(t *testing.T) {
	spec := pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("s", "Ghost"), step("s", "Search"), step("a", "Analyze")}}
	_, _, err := pipeline.Validate(spec, lookup, route.NewRouter())
	for _, is := range []error{pipeline.ErrUnknownAgent, route.ErrMissingInput, schemas.ErrInvalidPipeline} {
		if !errors.Is(err, is) {
			t.Errorf("error %q misses %v", err, is)
		}
	}
}

func TestValidatePipelineAcceptsMergeableFanInAndChains(t *testing.T) {
	for name, spec := range map[string]pipelinespec.PipelineSpec{
		"seed feeds the first step":          {Seed: pipelinespec.PipelineSeed{Images: []string{"i"}}, Steps: []pipelinespec.PipelineStep{step("a", "Analyze")}},
		"mergeable diamond":                  {Steps: []pipelinespec.PipelineStep{step("s", "Search"), step("b", "Variant", "s"), step("c", "Variant", "s"), step("d", "Analyze", "b", "c")}},
		"state fills a grandchild":           {Steps: []pipelinespec.PipelineStep{step("s", "Search"), step("a", "Analyze", "s"), step("o", "Organize", "a")}},
		"chain of producers is not a fan-in": {Steps: []pipelinespec.PipelineStep{step("s", "Search"), step("b", "VariantNM", "s"), step("d", "Analyze", "s", "b")}},
		"explicit mapping": {Steps: []pipelinespec.PipelineStep{step("s", "Search"), step("b", "Analyze", "s"), step("c", "Analyze", "s"),
			{ID: "d", Agent: "Judge", DependsOn: []string{"b", "c"}, Inputs: map[string]string{"analysis": "b.analysis"}}}},
	} {
		if _, _, err := pipeline.Validate(spec, lookup, route.NewRouter()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestWaves(t *testing.T) {
	cases := []struct {
		name  string
		steps []pipelinespec.PipelineStep
		want  [][]string
	}{
		{"chain", []pipelinespec.PipelineStep{step("a", "A"), step("b", "B", "a"), step("c", "C", "b")}, [][]string{{"a"}, {"b"}, {"c"}}},
		{"diamond", []pipelinespec.PipelineStep{step("a", "A"), step("b", "B", "a"), step("c", "C", "a"), step("d", "D", "b", "c")}, [][]string{{"a"}, {"b", "c"}, {"d"}}},
		{"independent roots", []pipelinespec.PipelineStep{step("x", "A"), step("y", "B"), step("z", "C", "x")}, [][]string{{"x", "y"}, {"z"}}},
		{"deepest parent decides", []pipelinespec.PipelineStep{step("d", "D", "a", "c"), step("a", "A"), step("c", "C", "b"), step("b", "B", "a")}, [][]string{{"a"}, {"b"}, {"c"}, {"d"}}},
	}
	for _, c := range cases {
		got, err := pipelinespec.Waves(pipelinespec.PipelineSpec{Steps: c.steps})
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v %v, want %v", c.name, got, err, c.want)
		}
	}
	_, err := pipelinespec.Waves(pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{step("a", "A", "c"), step("b", "B", "a"), step("c", "C", "b")}})
	if !errors.Is(err, pipeline.ErrCycle) || !strings.Contains(err.Error(), "a -> b -> c -> a") {
		t.Errorf("cycle: %v", err)
	}
}

const yamlPipeline = `name: sunsets
seed:
  images: [img-1, img-2]
steps:
  - id: search
    agent: ImageSearchAgent
    params: {query: sunset, limit: 5, tags: [warm]}
  - id: analyze
    agent: AnalysisAgent
    depends_on: [search]
    timeout_ms: 2000
  - id: organize
    agent: OrganizerAgent
    depends_on: [analyze, search]
    inputs: {images: search.images}
`

const jsonPipeline = `{"name": "sunsets", "seed": {"images": ["img-1", "img-2"]},
 "steps": [
  {"id": "search", "agent": "ImageSearchAgent", "params": {"query": "sunset", "limit": 5, "tags": ["warm"]}},
  {"id": "analyze", "agent": "AnalysisAgent", "depends_on": ["search"], "timeout_ms": 2000},
  {"id": "organize", "agent": "OrganizerAgent", "depends_on": ["analyze", "search"], "inputs": {"images": "search.images"}}]}`

func TestYAMLJSONAndBuilderAreEquivalent(t *testing.T) {
	dir := t.TempDir()
	yp, jp := filepath.Join(dir, "p.yaml"), filepath.Join(dir, "p.json")
	os.WriteFile(yp, []byte(yamlPipeline), 0o600)
	os.WriteFile(jp, []byte(jsonPipeline), 0o600)
	fromYAML, err := client.LoadPipeline(yp)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := client.LoadPipeline(jp)
	if err != nil {
		t.Fatal(err)
	}
	built, err := client.NewPipeline("sunsets").SeedImages("img-1", "img-2").
		Step("search", "ImageSearchAgent").Param("query", "sunset").Param("limit", 5).Param("tags", []string{"warm"}).
		Then("analyze", "AnalysisAgent").Timeout(2e9).
		Then("organize", "OrganizerAgent").After("search").Input("images", "search.images").
		Build()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromYAML, fromJSON) {
		t.Errorf("YAML %+v\n!= JSON %+v", fromYAML, fromJSON)
	}
	if !reflect.DeepEqual(fromYAML, built) {
		t.Errorf("YAML %+v\n!= builder %+v", fromYAML, built)
	}
}

func TestParsePipelineRejectsUnknownFields(t *testing.T) {
	for format, doc := range map[string]string{
		"yaml": "steps:\n  - id: a\n    agent: A\n    depends: [b]\n",
		"json": `{"steps": [{"id": "a", "agent": "A", "depends": ["b"]}]}`,
	} {
		_, err := client.ParsePipeline([]byte(doc), format)
		if err == nil || !strings.Contains(err.Error(), "depends") {
			t.Errorf("%s: %v, want an error naming the unknown field", format, err)
		}
	}
}

func TestBuilderReportsMisuse(t *testing.T) {
	_, err := client.NewPipeline("p").Param("q", 1).Step("a", "A").Then("b", "B").After("a").Step("c", "C").After("c").Build()
	if err == nil || !strings.Contains(err.Error(), "Param: no current step") || !strings.Contains(err.Error(), "depends on itself") {
		t.Errorf("err %v", err)
	}
	spec := client.NewPipeline("d").Step("a", "A").Then("b", "B").Step("c", "C").After("a").Step("d", "D").After("b", "c").MustBuild()
	if got := spec.Steps[3].DependsOn; !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("d depends on %v", got)
	}
}

// Validating a pipeline costs memory in proportion to its steps: a chain of
// 5,000 steps, each input mapped to its parent's output, validates in a few
// MiB (ancestor sets per step would take about 1 GiB).
func TestValidateLongChainInLinearMemory(t *testing.T) {
	const n = 5000
	steps := []pipelinespec.PipelineStep{step("s0", "Search")}
	for i := 1; i < n; i++ {
		s := step(fmt.Sprintf("s%d", i), "Variant", fmt.Sprintf("s%d", i-1))
		s.Inputs = map[string]string{"images": fmt.Sprintf("s%d.images", i-1)}
		steps = append(steps, s)
	}
	spec := pipelinespec.PipelineSpec{Name: "long", Steps: steps}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, waves, err := pipeline.Validate(spec, lookup, route.NewRouter())
	runtime.ReadMemStats(&after)
	if err != nil || len(waves) != n {
		t.Fatalf("%d waves, %v", len(waves), err)
	}
	if mib := float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20); mib > 64 {
		t.Errorf("validating %d steps allocated %.0f MiB", n, mib)
	} else {
		t.Logf("validating %d steps allocated %.1f MiB", n, mib)
	}
}
