package agents

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/schemas"
)

// TestParamsCheckRemembersOnlyValid checks that the params cache answers as
// the schema does, every time: a valid document passes again from the
// cache, a bad one (or a missing required one) is rejected with the
// schema's problem however often it comes.
func TestParamsCheckRemembersOnlyValid(t *testing.T) {
	c := schemas.AgentContract{Name: "P", Params: json.RawMessage(`{"type":"object","required":["op"],"properties":{"op":{"enum":["upper","lower"]}}}`)}
	p := newParamsCheck(c)
	for range 3 {
		if err := p.check(map[string]any{"op": "upper"}); err != nil {
			t.Fatalf("valid params rejected: %v", err)
		}
		if err := p.check(map[string]any{"op": "shout"}); err == nil || !strings.Contains(err.Error(), "params of P") {
			t.Fatalf("op shout: %v, want the schema's problem", err)
		}
		if err := p.check(nil); err == nil {
			t.Fatal("missing op accepted")
		}
	}
	if len(p.valid) != 1 {
		t.Errorf("cache holds %d documents, want only the valid one", len(p.valid))
	}
	for i := range paramsCacheSize + 10 {
		if err := p.check(map[string]any{"op": "lower", "n": i}); err != nil {
			t.Fatal(err)
		}
	}
	if len(p.valid) > paramsCacheSize {
		t.Errorf("cache grew to %d, bound %d", len(p.valid), paramsCacheSize)
	}
	if err := newParamsCheck(schemas.AgentContract{Name: "Q"}).check(map[string]any{"anything": 1}); err != nil {
		t.Errorf("a contract without a params schema rejected params: %v", err)
	}
}
