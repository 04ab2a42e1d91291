// Package pricing is the one price table of the mesh: what a model's tokens
// cost. The LLM client prices its calls with it, and an agent that calls a
// model through its own SDK prices the tokens it reports with the same
// table, so every cost in a turn's or a run's totals comes from one place.
package pricing

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// EnvPrices is the environment variable that overrides or extends the
// built-in table: a JSON object of model to {"prompt": USD, "completion":
// USD} per million tokens.
const EnvPrices = "AGENTMESH_PRICES"

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Prompt     float64 `json:"prompt"`
	Completion float64 `json:"completion"`
}

// Cost returns the price of prompt and completion tokens.
func (p Price) Cost(prompt, completion int) float64 {
	return (float64(prompt)*p.Prompt + float64(completion)*p.Completion) / 1e6
}

// Table maps model names to prices. A model is priced by its exact entry,
// else by the longest entry that prefixes it ("gpt-4o-mini-2024-07-18" is
// priced as "gpt-4o-mini").
type Table map[string]Price

// Default returns a copy of the built-in table. Models not in it (local
// models served by Ollama, vLLM or llama.cpp) cost nothing unless priced
// with AGENTMESH_PRICES or With.
func Default() Table {
	return Table{
		"gpt-4o":       {Prompt: 2.50, Completion: 10.00},
		"gpt-4o-mini":  {Prompt: 0.15, Completion: 0.60},
		"gpt-4.1":      {Prompt: 2.00, Completion: 8.00},
		"gpt-4.1-mini": {Prompt: 0.40, Completion: 1.60},
		"gpt-4.1-nano": {Prompt: 0.10, Completion: 0.40},
		"o4-mini":      {Prompt: 1.10, Completion: 4.40},

		"claude-opus-4":     {Prompt: 15.00, Completion: 75.00},
		"claude-opus-4-5":   {Prompt: 5.00, Completion: 25.00},
		"claude-sonnet-4":   {Prompt: 3.00, Completion: 15.00},
		"claude-haiku-4-5":  {Prompt: 1.00, Completion: 5.00},
		"claude-3-5-haiku":  {Prompt: 0.80, Completion: 4.00},
		"claude-3-7-sonnet": {Prompt: 3.00, Completion: 15.00},

		"gemini-2.5-pro":        {Prompt: 1.25, Completion: 10.00},
		"gemini-2.5-flash":      {Prompt: 0.30, Completion: 2.50},
		"gemini-2.5-flash-lite": {Prompt: 0.10, Completion: 0.40},
	}
}

// With returns a copy of t with the entries of over added or replacing
// t's.
func (t Table) With(over map[string]Price) Table {
	out := maps.Clone(t)
	if out == nil {
		out = Table{}
	}
	maps.Copy(out, over)
	return out
}

// Lookup finds the price of model: its exact entry, else the longest entry
// that prefixes it.
func (t Table) Lookup(model string) (Price, bool) {
	if p, ok := t[model]; ok {
		return p, true
	}
	best, found := "", false
	for name := range t {
		if strings.HasPrefix(model, name) && len(name) > len(best) {
			best, found = name, true
		}
	}
	return t[best], found
}

// Cost returns what tokens of model cost, and false (with 0) when the
// table has no price for it.
func (t Table) Cost(model string, tokens schemas.Tokens) (float64, bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	return p.Cost(tokens.Prompt, tokens.Completion), true
}

// Parse reads a table in the AGENTMESH_PRICES format. An error names the
// variable and the expected shape.
func Parse(s string) (map[string]Price, error) {
	var out map[string]Price
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object of model to {\"prompt\": USD per 1M tokens, \"completion\": ...}: %v", EnvPrices, err)
	}
	for model, p := range out {
		if p.Prompt < 0 || p.Completion < 0 {
			return nil, fmt.Errorf("%s: the price of %q is negative (%v, %v); give USD per 1M tokens, 0 or more", EnvPrices, model, p.Prompt, p.Completion)
		}
	}
	return out, nil
}
