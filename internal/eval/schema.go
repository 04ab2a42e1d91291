package eval

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// answerSchema compiles an expectation's schema, written as YAML or JSON.
func answerSchema(v any) (*schemas.Schema, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cannot be written as JSON (%v); write the schema as a mapping such as {type: object}", err)
	}
	return schemas.CompileSchema("eval/schema", raw)
}

// schemaMiss says why what (e.g. "the answer") is not a document schema
// accepts, naming every problem; "" when it is.
func schemaMiss(schema any, what, doc string) string {
	sch, err := answerSchema(schema)
	if err != nil {
		return fmt.Sprintf("%s cannot be checked: the schema %v", what, err)
	}
	probs := sch.Check([]byte(unfence(doc)))
	if len(probs) == 0 {
		return ""
	}
	parts := make([]string, len(probs))
	for i, p := range probs {
		parts[i] = p.String()
	}
	return fmt.Sprintf("%s does not meet the schema: %s", what, strings.Join(parts, "; "))
}

// unfence returns the JSON of an answer written in a Markdown code fence
// (```json ... ```), else the answer trimmed.
func unfence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	body := s[3 : len(s)-3]
	if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.ContainsAny(body[:nl], "{[\"") {
		body = body[nl+1:]
	}
	return strings.TrimSpace(body)
}
