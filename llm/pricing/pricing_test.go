package pricing_test

import (
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/llm/pricing"
	"github.com/agentmesh/agentmesh/schemas"
)

func TestLookupAndCost(t *testing.T) {
	tab := pricing.Default().With(map[string]pricing.Price{"llama3.2": {Prompt: 0.5, Completion: 1}, "gpt-4o-mini": {Prompt: 9}})
	for _, c := range []struct {
		model string
		want  float64
		ok    bool
	}{
		{"gpt-4o-mini-2024-07-18", 9 * 1000 / 1e6, true}, // the longest prefix, overridden
		{"gpt-4o-2024-08-06", (2.5*1000 + 10*100) / 1e6, true},
		{"llama3.2", (0.5*1000 + 1*100) / 1e6, true},
		{"mistral", 0, false},
	} {
		got, ok := tab.Cost(c.model, schemas.Tokens{Prompt: 1000, Completion: 100})
		if got != c.want || ok != c.ok {
			t.Errorf("Cost(%s) = %v, %v; want %v, %v", c.model, got, ok, c.want, c.ok)
		}
	}
	if _, ok := pricing.Default()["llama3.2"]; ok {
		t.Error("With changed the default table")
	}
}

func TestParse(t *testing.T) {
	got, err := pricing.Parse(`{"llama3.2": {"prompt": 0.5, "completion": 1}}`)
	if err != nil || got["llama3.2"] != (pricing.Price{Prompt: 0.5, Completion: 1}) {
		t.Fatalf("Parse = %v, %v", got, err)
	}
	for _, bad := range []string{`{"gpt": 3}`, `[1]`, `{"m": {"prompt": -1}}`} {
		if _, err := pricing.Parse(bad); err == nil || !strings.Contains(err.Error(), pricing.EnvPrices) {
			t.Errorf("Parse(%s) = %v; want an error naming %s", bad, err, pricing.EnvPrices)
		}
	}
}

// FuzzParse: outside input (an environment variable) never panics, and
// what parses has no negative price.
func FuzzParse(f *testing.F) {
	f.Add(`{"llama3.2": {"prompt": 0.5, "completion": 1}}`)
	f.Add(`{"m": {"prompt": -1}}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, s string) {
		tab, err := pricing.Parse(s)
		if err != nil {
			return
		}
		for m, p := range tab {
			if p.Prompt < 0 || p.Completion < 0 {
				t.Fatalf("%q parsed with a negative price %+v", m, p)
			}
		}
	})
}
