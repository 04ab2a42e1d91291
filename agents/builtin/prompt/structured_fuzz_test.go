package prompt

import (
	"encoding/json"
	"testing"

	"github.com/agentmesh/agentmesh/schemas"
)

// FuzzDecodeOutputs feeds any model answer (outside input) to the reader
// of structured outputs: it never panics, and what it accepts is exactly
// the declared outputs, each valid for its data type.
func FuzzDecodeOutputs(f *testing.F) {
	f.Add(`{"groups": {"categories": {"dusk": ["f-1"]}}, "reason": "warm"}`)
	f.Add("```json\n{\"groups\": {\"categories\": {}}, \"reason\": \"\"}\n```")
	f.Add(`{"groups": {"categories": "x"}, "reason": 3, "extra": null}`)
	f.Add(`[1, 2]`)
	f.Add("```")
	cfg, err := Parse([]byte(`
name: Sorter
description: Sorts.
capability: ANALYSIS
system_prompt: Sort.
outputs:
  - {name: groups, data_type: CATEGORIZATION}
  - {name: reason, data_type: TEXT}
`))
	if err != nil {
		f.Fatal(err)
	}
	a, err := New(cfg, nil)
	if err != nil {
		f.Fatal(err)
	}
	reg := schemas.DefaultRegistry()
	f.Fuzz(func(t *testing.T, reply string) {
		values, problems := a.decodeOutputs(reply)
		if len(problems) > 0 {
			if values != nil {
				t.Fatalf("values %v returned with problems %q", values, problems)
			}
			return
		}
		if len(values) != len(cfg.Outputs) {
			t.Fatalf("accepted %d values for %d outputs: %q", len(values), len(cfg.Outputs), reply)
		}
		for _, out := range cfg.Outputs {
			v, ok := values[out.Name]
			if !ok || v.DataType != out.DataType || !json.Valid(v.Value) {
				t.Fatalf("output %s: %+v", out.Name, v)
			}
			if err := reg.Validate(out.DataType, v.Value); err != nil {
				t.Fatalf("accepted an invalid %s: %v", out.Name, err)
			}
		}
	})
}
