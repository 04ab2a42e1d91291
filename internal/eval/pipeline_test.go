package eval

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/schemas"
)

const pipelineSet = `
name: pipelines
cases:
  - name: inline
    pipeline:
      name: shout
      vars: {op: upper}
      steps:
        - {id: up, agent: TextAgent, params: {op: upper}}
    vars: {op: reverse}
    expect:
      state: completed
      outputs:
        up.text: {contains: [HELLO], regex: ['^[A-Z ]+$'], schema: {type: string}}
      agents: [TextAgent]
      params: {up: {op: upper}}
  - name: from a file
    pipeline: ../pipelines/readme.yaml
    expect: {state: failed, code: agent_failed}
`

func TestParsePipelineCases(t *testing.T) {
	s, err := Parse([]byte(pipelineSet))
	if err != nil {
		t.Fatal(err)
	}
	in, file := s.Cases[0], s.Cases[1]
	if !strings.Contains(string(in.Pipeline.Inline), "agent: TextAgent") || in.Pipeline.File != "" || in.Vars["op"] != "reverse" {
		t.Errorf("inline case %+v", in)
	}
	if file.Pipeline.File != "../pipelines/readme.yaml" || file.Expect.Code != "agent_failed" || file.Expect.State != schemas.RunFailed {
		t.Errorf("file case %+v", file)
	}
	for _, tt := range []struct{ yaml, says string }{
		{"name: x\ncases: [{name: a, chat: hi, pipeline: p.yaml}]\n", `case "a" has both a chat message and a pipeline`},
		{"name: x\ncases: [{name: a, pipeline: [1]}]\n", "pipeline: give the path of a pipeline file"},
		{"name: x\ncases: [{name: a, pipeline: p.yaml, expect: {contains: [x]}}]\n", `case "a": a pipeline has no answer`},
		{"name: x\ncases: [{name: a, pipeline: p.yaml, expect: {state: input_required}}]\n", `state "input_required": a pipeline run ends`},
		{"name: x\ncases: [{name: a, pipeline: p.yaml, expect: {outputs: {text: {}}}}]\n", `output "text": name it STEP.NAME`},
		{"name: x\ncases: [{name: a, pipeline: p.yaml, expect: {outputs: {s.t: {regex: ['(']}}}}]\n", `output s.t regex "("`},
		{"name: x\ncases: [{name: a, chat: hi, expect: {outputs: {s.t: {}}}}]\n", "outputs are a pipeline's"},
		{"name: x\ncases: [{name: a, chat: hi, vars: {a: 1}}]\n", "vars are a pipeline's"},
		{"name: x\ncases: [{name: a, pipeline: p.yaml, expect: {judge: {rubric: r}}}]\n", `case "a": a pipeline has no answer`},
		{"name: x\ncases: [{name: a, chat: hi, expect: {judge: {pass: 0.5}}}]\n", `case "a": judge has no rubric`},
		{"name: x\ncases: [{name: a, chat: hi, expect: {judge: {rubric: r, pass: 2}}}]\n", `case "a": judge pass 2`},
	} {
		_, err := Parse([]byte(tt.yaml))
		if !errors.Is(err, ErrInvalidSet) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%q: %v, want an error saying %q", tt.yaml, err, tt.says)
		}
	}
}

func TestCheckPipelineOutcome(t *testing.T) {
	s, err := Parse([]byte(pipelineSet))
	if err != nil {
		t.Fatal(err)
	}
	text := func(s string) schemas.TypedValue {
		b, _ := json.Marshal(s)
		return schemas.TypedValue{DataType: "TEXT", Value: b}
	}
	o := Outcome{
		State:    schemas.RunCompleted,
		Outputs:  map[string]schemas.TypedValue{"up.text": text("HELLO WORLD")},
		Calls:    []Call{{Agent: "TextAgent", Step: "up", Params: map[string]any{"op": "upper"}}},
		Duration: time.Second,
	}
	e := s.Cases[0].Expect
	if miss := CheckOutcome(e, o); len(miss) != 0 {
		t.Errorf("a matching run missed %q", miss)
	}
	for _, tt := range []struct {
		name string
		o    Outcome
		want []string
	}{
		{"output", Outcome{State: schemas.RunCompleted, Outputs: map[string]schemas.TypedValue{"up.text": text("hi there")}, Calls: o.Calls},
			[]string{`output up.text lacks "HELLO"`, `output up.text does not match "^[A-Z ]+$"`}},
		{"no output", Outcome{State: schemas.RunCompleted, Outputs: map[string]schemas.TypedValue{"up.other": text("x")}, Calls: o.Calls},
			[]string{"no output up.text (outputs: up.other)"}},
		{"schema of an output", Outcome{State: schemas.RunCompleted, Outputs: map[string]schemas.TypedValue{"up.text": {Value: json.RawMessage(`["HELLO"]`)}}, Calls: o.Calls},
			[]string{`output up.text does not match "^[A-Z ]+$"`, "output up.text does not meet the schema: "}},
		{"params of a step", Outcome{State: schemas.RunCompleted, Outputs: o.Outputs, Calls: []Call{{Agent: "TextAgent", Step: "up", Params: map[string]any{"op": "lower"}}}},
			[]string{`up was called with op="lower", want "upper"`}},
		{"failed", Outcome{State: schemas.RunFailed, Error: "step up: boom", Outputs: o.Outputs},
			[]string{"state failed, want completed: step up: boom", "agents called none, want TextAgent in that order", "up was not called, so its params cannot be checked"}},
	} {
		got := CheckOutcome(e, tt.o)
		if tt.name == "schema of an output" && len(got) == 2 && strings.HasPrefix(got[1], tt.want[1]) {
			got[1] = tt.want[1]
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	code := s.Cases[1].Expect
	if miss := CheckOutcome(code, Outcome{State: schemas.RunFailed, Code: "timeout"}); !reflect.DeepEqual(miss, []string{"code timeout, want agent_failed"}) {
		t.Errorf("code: %q", miss)
	}
}
