package client

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

const loopsYAML = `
name: loops
vars: {words: [a, b]}
steps:
  - {id: each, kind: for_each, agent: TextAgent, params: {op: title}, for_each: {items: vars.words, input: text, parallel: 3}}
  - {id: grow, kind: repeat, agent: TextAgent, depends_on: [each], repeat: {until: 'iteration > 2', max_iterations: 4}}
  - id: sub
    kind: pipeline
    depends_on: [grow]
    pipeline:
      spec:
        name: child
        seed: {values: {text: {data_type: TEXT, value: x}}}
        steps: [{id: up, agent: TextAgent, inputs: {text: seed.text}}]
      inputs: {text: grow.text}
      outputs: {out: up.text}
  - {id: named, kind: pipeline, pipeline: {name: shout-back}}
`

const loopsJSON = `{"name":"loops","vars":{"words":["a","b"]},"steps":[
 {"id":"each","kind":"for_each","agent":"TextAgent","params":{"op":"title"},"for_each":{"items":"vars.words","input":"text","parallel":3}},
 {"id":"grow","kind":"repeat","agent":"TextAgent","depends_on":["each"],"repeat":{"until":"iteration > 2","max_iterations":4}},
 {"id":"sub","kind":"pipeline","depends_on":["grow"],"pipeline":{"spec":{"name":"child","seed":{"values":{"text":{"data_type":"TEXT","value":"x"}}},
   "steps":[{"id":"up","agent":"TextAgent","inputs":{"text":"seed.text"}}]},"inputs":{"text":"grow.text"},"outputs":{"out":"up.text"}}},
 {"id":"named","kind":"pipeline","pipeline":{"name":"shout-back"}}]}`

// TestLoopKindsEverywhere: for_each, repeat and pipeline steps written in
// YAML, in JSON and with the builder decode to equal specs, which pass the
// JSON Schema of pipeline specs.
func TestLoopKindsEverywhere(t *testing.T) {
	fromYAML, err := ParsePipeline([]byte(loopsYAML), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := ParsePipeline([]byte(loopsJSON), "json")
	if err != nil {
		t.Fatal(err)
	}
	child := NewPipeline("child").SeedValue("text", schemas.TypeText, "", "x").
		Step("up", "TextAgent").Input("text", "seed.text").MustBuild()
	built, err := NormalizeSpec(NewPipeline("loops").Var("words", []any{"a", "b"}).
		Step("each", "TextAgent").Param("op", "title").ForEach("vars.words", 3).ItemInput("text").
		Then("grow", "TextAgent").RepeatUntil("iteration > 2", 4).
		SubPipeline("sub", child).After("grow").MapIn("text", "grow.text").MapOut("out", "up.text").
		Pipeline("named", "shout-back").
		MustBuild())
	if err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string]pipelinespec.PipelineSpec{"JSON": fromJSON, "builder": built} {
		if !reflect.DeepEqual(fromYAML, spec) {
			a, _ := json.Marshal(fromYAML)
			b, _ := json.Marshal(spec)
			t.Errorf("YAML and %s differ:\n%s\n%s", name, a, b)
		}
	}
	b, _ := json.Marshal(fromYAML)
	if err := schemas.ValidateJSON(schemas.SchemaPipeline, b); err != nil {
		t.Errorf("JSON Schema: %v", err)
	}
	bad := []byte(`{"steps":[{"id":"e","kind":"for_each","agent":"A","for_each":{"items":"seed.x","parallel":0}},{"id":"r","kind":"repeat","agent":"A","repeat":{"until":"true"}}]}`)
	if err := schemas.ValidateJSON(schemas.SchemaPipeline, bad); err == nil {
		t.Error("the JSON Schema takes parallel 0 and a repeat without max_iterations")
	}
}
