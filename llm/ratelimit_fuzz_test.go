package llm_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentmesh/agentmesh/llm"
)

// FuzzParseRateLimits feeds any text to the parser of AGENTMESH_LLM_LIMITS:
// it never panics, a refusal is ErrInvalidConfig, and what it accepts is
// valid and reads back the same after being written as the LLM bucket
// stores it.
func FuzzParseRateLimits(f *testing.F) {
	f.Add(`{"window":"1m","models":{"gpt-4o-mini":{"requests":500,"tokens":200000}},"providers":{"openai":{"requests":3000}}}`)
	f.Add(`{"window":"0s"}`)
	f.Add(`{"models":{"m":{"requests":-1}}}`)
	f.Add(`{"providers":{"google":{}}}`)
	f.Add(`{"window":5}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, s string) {
		l, err := llm.ParseRateLimits(s)
		if err != nil {
			if !errors.Is(err, llm.ErrInvalidConfig) {
				t.Fatalf("refusal %v is not ErrInvalidConfig", err)
			}
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("accepted %q but Validate says %v", s, err)
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		back, err := llm.ParseRateLimits(string(b))
		if err != nil || !reflect.DeepEqual(normal(back), normal(l)) {
			t.Fatalf("%s reads back as %+v, %v; want %+v", b, back, err, l)
		}
	})
}

// normal treats an empty map as none.
func normal(l llm.RateLimits) llm.RateLimits {
	if len(l.Models) == 0 {
		l.Models = nil
	}
	if len(l.Providers) == 0 {
		l.Providers = nil
	}
	return l
}
