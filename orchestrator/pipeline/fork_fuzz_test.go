package pipeline

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// FuzzForkSpec feeds forkSpec fork requests as they come off the bus
// (the schema, then Validate, as Fork reads them): it never panics, and a
// fork it accepts changes no step that keeps its outputs, runs again at
// least the step asked, and leaves the original spec as it was.
func FuzzForkSpec(f *testing.F) {
	for _, seed := range []string{
		`{"from":"r","at":"b"}`,
		`{"from":"r","at":"b","params":{"b.n":"3","c.flag":"true","c.list":"x,y"}}`,
		`{"from":"r","at":"a","vars":{"v":"2"}}`,
		`{"from":"r","at":"b","vars":{"v":2,"w":"x"},"params":{"a.n":1}}`,
		`{"from":"r","at":"c","params":{"c.new":{"k":[1,2]}}}`,
	} {
		f.Add([]byte(seed))
	}
	orig := pipelinespec.PipelineSpec{Name: "p", Vars: map[string]any{"v": 1.0, "w": "s"}, Steps: []pipelinespec.PipelineStep{
		{ID: "a", Agent: "A", Params: map[string]any{"n": "${vars.v}"}},
		{ID: "b", Agent: "B", DependsOn: []string{"a"}, Params: map[string]any{"n": 1.0}},
		{ID: "c", Agent: "C", DependsOn: []string{"b"}, Params: map[string]any{"flag": false, "list": []any{"a"}}},
		{ID: "d", Agent: "D", DependsOn: []string{"a"}, When: "vars.w == 's'"},
	}}
	before, _ := json.Marshal(orig)
	f.Fuzz(func(t *testing.T, data []byte) {
		if schemas.ValidateJSON(schemas.SchemaFork, data) != nil {
			return
		}
		var req schemas.ForkRequest
		if json.Unmarshal(data, &req) != nil || req.Validate() != nil {
			return
		}
		spec, down, err := forkSpec(orig, req)
		if after, _ := json.Marshal(orig); string(after) != string(before) {
			t.Fatalf("forkSpec changed the original spec: %s", after)
		}
		if err != nil {
			return
		}
		if !down[req.At] {
			t.Fatalf("step %q does not run again in a fork at it", req.At)
		}
		for i, st := range orig.Steps {
			if !down[st.ID] && !reflect.DeepEqual(st, spec.Steps[i]) {
				t.Fatalf("kept step %q changed: %+v -> %+v", st.ID, st, spec.Steps[i])
			}
		}
	})
}
