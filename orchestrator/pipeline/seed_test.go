package pipeline_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/orchestrator/pipeline"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// agents with params schemas and non-file inputs, for the params and seed
// tests.
var paramsLive = map[string]schemas.AgentContract{
	"Shout": {Name: "Shout", Capability: schemas.CapTransformation, Description: "shouts",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
		Params:  json.RawMessage(`{"type":"object","properties":{"times":{"type":"integer","minimum":1},"mode":{"enum":["loud","quiet"]}}}`)},
	"Closed": {Name: "Closed", Capability: schemas.CapTransformation, Description: "closed params",
		Params: json.RawMessage(`{"type":"object","properties":{"op":{"type":"string"}},"additionalProperties":false}`)},
	"Organize": live["Organize"],
}

func paramsLookup(a string) (schemas.AgentContract, bool) { c, ok := paramsLive[a]; return c, ok }

func seedValues(vs map[string]pipelinespec.SeedValue) pipelinespec.PipelineSeed {
	return pipelinespec.PipelineSeed{Values: vs}
}

func TestValidateChecksParamsAndSeedValues(t *testing.T) {
	text := func(s string) pipelinespec.SeedValue {
		return pipelinespec.SeedValue{DataType: schemas.TypeText, Value: s}
	}
	shout := func(params map[string]any, in map[string]string) pipelinespec.PipelineStep {
		return pipelinespec.PipelineStep{ID: "s", Agent: "Shout", Params: params, Inputs: in}
	}
	greeting := seedValues(map[string]pipelinespec.SeedValue{"greeting": text("hi")})
	cases := []struct {
		name  string
		spec  pipelinespec.PipelineSpec
		is    error
		wants []string
	}{
		{"param of the wrong type", pipelinespec.PipelineSpec{Seed: greeting, Steps: []pipelinespec.PipelineStep{shout(map[string]any{"times": "three"}, nil)}},
			pipeline.ErrBadParams, []string{`step "s" (Shout)`, "/times", "params of Shout"}},
		{"param out of its enum", pipelinespec.PipelineSpec{Seed: greeting, Steps: []pipelinespec.PipelineStep{shout(map[string]any{"mode": "shrill"}, nil)}},
			pipeline.ErrBadParams, []string{"/mode"}},
		{"unknown param, schema open", pipelinespec.PipelineSpec{Seed: greeting, Steps: []pipelinespec.PipelineStep{shout(map[string]any{"tims": 2.0}, nil)}},
			pipeline.ErrBadParams, []string{`does not take param "tims"`, "its params: mode, times"}},
		{"unknown param, schema closed", pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{{ID: "c", Agent: "Closed", Params: map[string]any{"opp": "x"}}}},
			pipeline.ErrBadParams, []string{"opp"}},
		{"seed value failing its type's schema", pipelinespec.PipelineSpec{
			Seed:  seedValues(map[string]pipelinespec.SeedValue{"cats": {DataType: schemas.TypeCategorization, Value: map[string]any{"categories": 5.0}}}),
			Steps: []pipelinespec.PipelineStep{shout(nil, map[string]string{"text": "text:x"})}},
			schemas.ErrInvalidValue, []string{"seed.values.cats", "CATEGORIZATION"}},
		{"seed value of an unknown type", pipelinespec.PipelineSpec{
			Seed:  seedValues(map[string]pipelinespec.SeedValue{"x": {DataType: "NOPE", Value: 1.0}}),
			Steps: []pipelinespec.PipelineStep{shout(nil, map[string]string{"text": "text:x"})}},
			schemas.ErrUnknownDataType, []string{"seed.values.x", `"NOPE"`, "TEXT"}},
		{"input mapped to a seed value that is not there", pipelinespec.PipelineSpec{Seed: greeting, Steps: []pipelinespec.PipelineStep{shout(nil, map[string]string{"text": "seed.greting"})}},
			pipeline.ErrBadInputSource, []string{"seed.greting", "it holds: greeting", "seed.values.greting"}},
		{"input mapped to a seed value of another type", pipelinespec.PipelineSpec{
			Seed:  seedValues(map[string]pipelinespec.SeedValue{"cats": {DataType: schemas.TypeCategorization, Value: map[string]any{"categories": map[string]any{}}}}),
			Steps: []pipelinespec.PipelineStep{shout(nil, map[string]string{"text": "seed.cats"})}},
			pipeline.ErrBadInputSource, []string{`"text" is TEXT`, "seed.cats holds CATEGORIZATION"}},
		{"two seeds filling one slot", pipelinespec.PipelineSpec{
			Seed: pipelinespec.PipelineSeed{Images: []string{"i"}, Values: map[string]pipelinespec.SeedValue{"more": {DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages,
				Value: map[string]any{"content_type": "images", "ids": []any{"j"}}}}},
			Steps: []pipelinespec.PipelineStep{shout(nil, map[string]string{"text": "text:x"})}},
			schemas.ErrInvalidPipeline, []string{"seed.images and seed.values.more both fill slot current_image_ids"}},
		{"seed value with a reserved name", pipelinespec.PipelineSpec{Seed: seedValues(map[string]pipelinespec.SeedValue{"images": text("x")}), Steps: []pipelinespec.PipelineStep{shout(nil, map[string]string{"text": "text:x"})}},
			schemas.ErrInvalidPipeline, []string{`name "images" is taken`}},
		{"seed value without a data type", pipelinespec.PipelineSpec{Seed: seedValues(map[string]pipelinespec.SeedValue{"g": {Value: "x"}}), Steps: []pipelinespec.PipelineStep{shout(nil, map[string]string{"text": "text:x"})}},
			schemas.ErrInvalidPipeline, []string{"seed.values.g: data_type is empty"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := pipeline.Validate(c.spec, paramsLookup, route.NewRouter())
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

// One submission with a bad param, an unknown param, a bad seed value and
// an unknown agent hears about all four in one error.
func TestValidateReportsParamsSeedsAndAgentsTogether(t *testing.T) {
	spec := pipelinespec.PipelineSpec{
		Seed: seedValues(map[string]pipelinespec.SeedValue{"cats": {DataType: schemas.TypeCategorization, Value: "not an object"}}),
		Steps: []pipelinespec.PipelineStep{
			{ID: "a", Agent: "Shout", Params: map[string]any{"times": -1.0, "volume": 11.0}, Inputs: map[string]string{"text": "text:x"}},
			{ID: "b", Agent: "Ghost"},
		}}
	_, _, err := pipeline.Validate(spec, paramsLookup, route.NewRouter())
	for _, w := range []string{"/times", `"volume"`, "seed.values.cats", `"Ghost"`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not say %q", err, w)
		}
	}
	for _, is := range []error{pipeline.ErrBadParams, schemas.ErrInvalidValue, pipeline.ErrUnknownAgent} {
		if !errors.Is(err, is) {
			t.Errorf("error %v misses %v", err, is)
		}
	}
}

func TestSeedValuesFillInputsAndSlots(t *testing.T) {
	for name, spec := range map[string]pipelinespec.PipelineSpec{
		"TEXT seed mapped by name": {Seed: seedValues(map[string]pipelinespec.SeedValue{"greeting": {DataType: schemas.TypeText, Value: "hello"}}),
			Steps: []pipelinespec.PipelineStep{{ID: "s", Agent: "Shout", Params: map[string]any{"times": 2.0}, Inputs: map[string]string{"text": "seed.greeting"}}}},
		"TEXT seed fills the text slot": {Seed: seedValues(map[string]pipelinespec.SeedValue{"greeting": {DataType: schemas.TypeText, Value: "hello"}}),
			Steps: []pipelinespec.PipelineStep{{ID: "s", Agent: "Shout"}}},
		"CATEGORIZATION seed fills an input no step produces": {Seed: pipelinespec.PipelineSeed{Images: []string{"i"},
			Values: map[string]pipelinespec.SeedValue{"cats": {DataType: schemas.TypeCategorization, Value: map[string]any{"categories": map[string]any{"sky": []any{"i"}}}}}},
			Steps: []pipelinespec.PipelineStep{{ID: "o", Agent: "Organize"}}},
	} {
		if _, _, err := pipeline.Validate(spec, paramsLookup, route.NewRouter()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

const yamlSeeded = `name: seeded
seed:
  values:
    cats: {data_type: CATEGORIZATION, value: {categories: {sky: [a, b]}, method: manual}}
    greeting: {data_type: TEXT, value: hello}
steps:
  - {id: s, agent: Shout, inputs: {text: seed.greeting}}
`

const jsonSeeded = `{"name": "seeded", "seed": {"values": {
  "cats": {"data_type": "CATEGORIZATION", "value": {"categories": {"sky": ["a", "b"]}, "method": "manual"}},
  "greeting": {"data_type": "TEXT", "value": "hello"}}},
  "steps": [{"id": "s", "agent": "Shout", "inputs": {"text": "seed.greeting"}}]}`

func TestSeedValuesReadTheSameFromYAMLJSONAndBuilder(t *testing.T) {
	fromYAML, err := client.ParsePipeline([]byte(yamlSeeded), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := client.ParsePipeline([]byte(jsonSeeded), "json")
	if err != nil {
		t.Fatal(err)
	}
	built, err := client.NewPipeline("seeded").
		SeedValue("cats", schemas.TypeCategorization, "", schemas.Categorization{Categories: map[string][]string{"sky": {"a", "b"}}, Method: "manual"}).
		SeedValue("greeting", schemas.TypeText, "", "hello").
		Step("s", "Shout").Input("text", "seed.greeting").Build()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromYAML, fromJSON) || !reflect.DeepEqual(fromYAML, built) {
		t.Errorf("YAML %+v\nJSON %+v\nbuilder %+v", fromYAML, fromJSON, built)
	}
	raw, _ := json.Marshal(fromYAML)
	if err := schemas.ValidateJSON(schemas.SchemaPipeline, raw); err != nil {
		t.Errorf("the spec fails pipeline.schema.json: %v", err)
	}
	if _, _, err := pipeline.Validate(fromYAML, paramsLookup, route.NewRouter()); err != nil {
		t.Error(err)
	}
}

// A pipeline spec is outside input: whatever decodes must validate without
// panicking, and an invalid one must say so with ErrInvalidPipeline.
func FuzzValidatePipeline(f *testing.F) {
	f.Add(jsonSeeded)
	f.Add(`{"steps":[{"id":"s","agent":"Shout","params":{"times":"x","y":1},"inputs":{"text":"seed.nope"}}],"seed":{"values":{"n":{"data_type":"NOPE","value":null}}}}`)
	f.Add(`{"steps":[{"id":"o","agent":"Organize","inputs":{"images":"seed.images"}}],"seed":{"images":["a"],"values":{"c":{"data_type":"CATEGORIZATION","value":{"categories":{}}}}}}`)
	f.Add(`{"steps":[{"id":"a","kind":"approval","timeout_ms":5,"human":{"prompt":"ok?","default":"approve"}},{"id":"i","kind":"input","timeout_ms":5,"depends_on":["a"],"human":{"prompt":"n?","data_type":"CATEGORIZATION","default":{"categories":{}}}}]}`)
	f.Add(`{"steps":[{"id":"i","kind":"input","agent":"Shout","human":{"prompt":"","default":[1]}},{"id":"s","agent":"Shout","depends_on":["i"],"inputs":{"text":"i.value"}}]}`)
	f.Add(`{"steps":[{"id":"e","kind":"for_each","agent":"Shout","for_each":{"items":"vars.w","parallel":2}},{"id":"r","kind":"repeat","agent":"Shout","depends_on":["e"],"repeat":{"until":"iteration > 2 && output.text == \"x\"","max_iterations":3}}],"vars":{"w":["a","b"]}}`)
	f.Add(`{"steps":[{"id":"p","kind":"pipeline","pipeline":{"spec":{"steps":[{"id":"s","agent":"Shout","inputs":{"text":"seed.t"}}],"seed":{"values":{"t":{"data_type":"TEXT","value":"x"}}}},"inputs":{"t":"text:y"},"outputs":{"o":"s.text"}}}]}`)
	f.Fuzz(func(t *testing.T, doc string) {
		spec, err := client.ParsePipeline([]byte(doc), "json")
		if err != nil {
			return
		}
		if _, _, err := pipeline.Validate(spec, paramsLookup, route.NewRouter()); err != nil && !errors.Is(err, pipeline.ErrInvalidPipeline) {
			t.Fatalf("error %v does not match ErrInvalidPipeline", err)
		}
	})
}
