package pipelinespec_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

func TestHumanStepValidation(t *testing.T) {
	spec := pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{
		{ID: "a", Kind: pipelinespec.StepKindApproval, Agent: "X", Human: &pipelinespec.HumanStep{Prompt: "ok?", Default: "maybe", DataType: "TEXT"}},
		{ID: "i", Kind: pipelinespec.StepKindInput, TimeoutMS: 10},
		{ID: "k", Kind: "loop", Agent: "X"},
	}}
	err := spec.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`step "a": a step of kind approval has no agent (it names "X")`, `step "a": a step of kind approval needs timeout_ms`,
		`human.default maybe: an approval's default is "approve" or "reject"`, `only an input step has a data type`,
		`step "i": a step of kind input needs human.prompt`, `unknown kind "loop"; the kinds are: agent, router, evaluator, approval, input`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// A resolution is outside input: whatever passes resolve.schema.json
// decodes into pipelinespec.Resolution with a run id that can be a subject token.
func FuzzResolutionDecode(f *testing.F) {
	f.Add(`{"runid":"r-1","step":"review","decision":"approve","comment":"ok","by":"ann"}`)
	f.Add(`{"runid":"r-1","step":"title","value":{"categories":{"a":["f"]}}}`)
	f.Add(`{"runid":"r.1","step":"x","decision":"maybe"}`)
	f.Fuzz(func(t *testing.T, doc string) {
		if schemas.ValidateJSON(schemas.SchemaResolve, []byte(doc)) != nil {
			return
		}
		var r pipelinespec.Resolution
		dec := json.NewDecoder(strings.NewReader(doc))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("valid by the schema but does not decode: %v", err)
		}
		if err := bus.ValidateToken("run id", r.RunID); err != nil {
			t.Fatalf("valid by the schema, but %v", err)
		}
	})
}
