package pipespec_test

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/agentmesh/agentmesh/internal/pipespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// FuzzParse: a pipeline written by anyone (a file, an HTTP body) never
// panics the parser; what it refuses is ErrInvalidPipeline, and what it
// accepts is normalised: normalising it again, or reading its JSON back,
// gives the same spec (compared as JSON).
func FuzzParse(f *testing.F) {
	for _, name := range []string{"sunsets.yaml", "conditions.yaml", "approval.yaml"} {
		b, err := os.ReadFile("../../examples/pipelines/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	f.Add([]byte(`{"name":"p","steps":[{"id":"a","agent":"A","params":{"n":1}}]}`), true)
	f.Add([]byte("name: [unclosed"), false)
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		format := "yaml"
		if asJSON {
			format = "json"
		}
		spec, err := pipespec.Parse(data, format)
		if err != nil {
			if !errors.Is(err, pipespec.ErrInvalidPipeline) || !errors.Is(err, schemas.ErrInvalidPipeline) {
				t.Fatalf("Parse refused with %v, not ErrInvalidPipeline", err)
			}
			return
		}
		raw, err := json.Marshal(spec)
		if err != nil {
			t.Fatalf("an accepted spec does not encode: %v", err)
		}
		again, err := pipespec.Normalize(spec)
		if err != nil {
			t.Fatalf("normalising a parsed spec again: %v", err)
		}
		if b, _ := json.Marshal(again); string(b) != string(raw) {
			t.Fatalf("normalising a parsed spec again changed it:\n%s\n%s", b, raw)
		}
		back, err := pipespec.Parse(raw, "json")
		if err != nil {
			t.Fatalf("an accepted spec's JSON is refused: %v\n%s", err, raw)
		}
		// Once read from JSON, a spec's JSON reads back the same (the
		// first reading may drop empty parts YAML gave).
		first, _ := json.Marshal(back)
		back2, err := pipespec.Parse(first, "json")
		if err != nil {
			t.Fatalf("a read-back spec's JSON is refused: %v\n%s", err, first)
		}
		if b, _ := json.Marshal(back2); string(b) != string(first) {
			t.Fatalf("an accepted spec's JSON reads back different:\n%s\n%s", b, first)
		}
	})
}
