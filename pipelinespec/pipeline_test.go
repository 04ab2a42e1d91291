package pipelinespec_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

func TestPipelineValidate(t *testing.T) {
	p := pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{
		{ID: "a", Agent: "A"},
		{ID: "a", Agent: "B", DependsOn: []string{"zzz"}},
		{ID: "", Agent: "bad agent"},
		{ID: "c", Agent: "C", DependsOn: []string{"c"}, TimeoutMS: -5},
	}}
	err := p.Validate()
	for _, want := range []string{`duplicate step id "a"`, `depends on "zzz"`, "id is empty", `"bad agent"`, `"c" depends on itself`, "timeout_ms -5"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if err := (pipelinespec.PipelineSpec{}).Validate(); !errors.Is(err, schemas.ErrInvalidPipeline) {
		t.Errorf("empty pipeline: %v", err)
	}
}

// TestWireSchemaAcceptsPipelineSpec checks a Go spec against the wire
// schema of pipelines that schemas keeps (schemas.SchemaPipeline).
func TestWireSchemaAcceptsPipelineSpec(t *testing.T) {
	raw, _ := json.Marshal(pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{{ID: "s", Agent: "A"}}})
	if err := schemas.ValidateJSON(schemas.SchemaPipeline, raw); err != nil {
		t.Errorf("%s: %v\n%s", schemas.SchemaPipeline, err, raw)
	}
}

func TestValidateStepVersion(t *testing.T) {
	spec := func(s pipelinespec.PipelineStep) pipelinespec.PipelineSpec {
		return pipelinespec.PipelineSpec{Name: "p", Steps: []pipelinespec.PipelineStep{s}}
	}
	if err := spec(pipelinespec.PipelineStep{ID: "a", Agent: "Echo", Version: "2.0.0"}).Validate(); err != nil {
		t.Errorf("a step pinned to 2.0.0: %v", err)
	}
	for _, tc := range []struct {
		step pipelinespec.PipelineStep
		want string
	}{
		{pipelinespec.PipelineStep{ID: "a", Agent: "Echo", Version: "2_0"}, `step "a" (Echo): version "2_0"`},
		{pipelinespec.PipelineStep{ID: "h", Kind: "approval", Version: "2.0.0", Human: &pipelinespec.HumanStep{Prompt: "ok?"}}, `step "h": version "2.0.0" pins the tasks of an agent`},
	} {
		err := spec(tc.step).Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v; want it to say %s", tc.step, err, tc.want)
		}
	}
}
