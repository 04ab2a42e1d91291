package schemas

import (
	"strings"
	"testing"
)

func TestCompileSchemaChecksADocument(t *testing.T) {
	s, err := CompileSchema("eval/answer", []byte(`{"type":"object","required":["total"],"properties":{"total":{"type":"number"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Check([]byte(`{"total": 3}`)); len(p) != 0 {
		t.Errorf("a good document has problems %v", p)
	}
	if p := s.Check([]byte(`{"total": "3"}`)); len(p) != 1 || p[0].Field != "/total" {
		t.Errorf("a string total: problems %v, want one at /total", p)
	}
	if p := s.Check([]byte(`total: 3`)); len(p) != 1 || !strings.Contains(p[0].Message, "not valid JSON") {
		t.Errorf("not JSON: problems %v", p)
	}
	if _, err := CompileSchema("eval/bad", []byte(`{"type": 5}`)); err == nil || !strings.Contains(err.Error(), "eval/bad") {
		t.Errorf("a bad schema compiled: %v", err)
	}
}
