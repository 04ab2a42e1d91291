package eval

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/schemas"
)

const schemaSet = `
name: orders
cases:
  - name: total
    chat: what is the order total? answer in JSON
    expect:
      schema:
        type: object
        required: [total, currency]
        properties:
          total: {type: number, minimum: 0}
          currency: {enum: [EUR, USD]}
`

// TestSchemaExpectation: an answer (bare or in a json fence) the schema
// accepts passes; one it refuses fails with every problem named, down to
// the field, in the table and the JUnit message.
func TestSchemaExpectation(t *testing.T) {
	s, err := Parse([]byte(schemaSet))
	if err != nil {
		t.Fatal(err)
	}
	e := s.Cases[0].Expect
	for _, good := range []string{`{"total": 12.5, "currency": "EUR"}`, "```json\n{\"total\": 0, \"currency\": \"USD\"}\n```"} {
		if miss := Check(e, schemas.ChatResponse{State: schemas.ChatCompleted, Output: good}); len(miss) != 0 {
			t.Errorf("%q missed %q", good, miss)
		}
	}
	for _, tt := range []struct{ answer, says string }{
		{`{"total": -1, "currency": "GBP"}`, "/total: "},
		{`{"total": -1, "currency": "GBP"}`, "/currency: "},
		{`{"total": 3}`, "currency"},
		{`The total is 3 EUR.`, "not valid JSON"},
	} {
		miss := Check(e, schemas.ChatResponse{State: schemas.ChatCompleted, Output: tt.answer})
		if len(miss) != 1 || !strings.HasPrefix(miss[0], "the answer does not meet the schema: ") || !strings.Contains(miss[0], tt.says) {
			t.Errorf("%q: misses %q, want one naming %q", tt.answer, miss, tt.says)
		}
	}
	miss := Check(e, schemas.ChatResponse{State: schemas.ChatCompleted, Output: `{"total": "3", "currency": "EUR"}`})
	results := Results(s, []Run{{Case: "total", N: 1, Misses: miss}})
	var table, junit bytes.Buffer
	if err := WriteTable(&table, results); err != nil {
		t.Fatal(err)
	}
	if err := WriteJUnit(&junit, s, results); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{table.String(), junit.String()} {
		if !strings.Contains(out, "the answer does not meet the schema: /total: ") {
			t.Errorf("the report does not name the problem:\n%s", out)
		}
	}
}

func TestParseRefusesABadSchema(t *testing.T) {
	for _, tt := range []struct{ yaml, says string }{
		{"name: x\ncases: [{name: a, chat: hi, expect: {schema: {type: 5}}}]\n", `case "a": schema: schema eval/schema does not compile`},
		{"name: x\ncases: [{name: a, chat: hi, expect: {schema: {1: 2}}}]\n", `case "a": schema: cannot be written as JSON`},
	} {
		_, err := Parse([]byte(tt.yaml))
		if !errors.Is(err, ErrInvalidSet) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%q: %v, want an error saying %q", tt.yaml, err, tt.says)
		}
	}
}
