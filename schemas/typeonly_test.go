package schemas

import (
	"bytes"
	"testing"
)

func TestTypeOnlyStart(t *testing.T) {
	for _, c := range []struct {
		schema string
		start  byte
		ok     bool
	}{
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"TEXT","description":"d","type":"string"}`, '"', true},
		{`{"type":"object"}`, '{', true},
		{`{"type":"array","$comment":"c"}`, '[', true},
		{`{"type":"string","minLength":1}`, 0, false},
		{`{"type":"string","format":"date-time"}`, 0, false},
		{`{"type":["string","null"]}`, 0, false},
		{`{"type":"integer"}`, 0, false},
		{`{"$ref":"#/$defs/x","type":"string"}`, 0, false},
		{`true`, 0, false},
		{`{}`, 0, false},
	} {
		start, ok := typeOnlyStart([]byte(c.schema))
		if start != c.start || ok != c.ok {
			t.Errorf("typeOnlyStart(%s) = %q, %v; want %q, %v", c.schema, start, ok, c.start, c.ok)
		}
	}
}

// TestTypeOnlyCheckKeepsErrors checks that a value the quick path does not
// accept still gets the validator's own problem.
func TestTypeOnlyCheckKeepsErrors(t *testing.T) {
	reg := NewRegistry()
	for _, bad := range []string{`1`, `{"a":1}`, `"unterminated`, ``} {
		err := reg.Validate(TypeText, []byte(bad))
		if err == nil {
			t.Errorf("TEXT accepted %q", bad)
		}
	}
	if err := reg.Validate(TypeText, []byte(` "fine" `)); err != nil {
		t.Errorf("TEXT rejected a string: %v", err)
	}
}

// FuzzTypeOnlyCheck checks that the quick path of a type-only schema never
// accepts a document its schema rejects.
func FuzzTypeOnlyCheck(f *testing.F) {
	for _, seed := range []string{`"x"`, ` "x" `, `"\ud800"`, `{}`, `[1,2]`, `{"a":[}`, `"a" "b"`, "\"\xff\"", `1`, `null`} {
		f.Add([]byte(seed))
	}
	var schs []*schemaNode
	var starts []byte
	for _, typ := range []string{"string", "object", "array"} {
		raw := []byte(`{"type":"` + typ + `"}`)
		sch, err := compileSchemaNow("fuzz/"+typ, raw)
		if err != nil {
			f.Fatal(err)
		}
		start, _ := typeOnlyStart(raw)
		schs, starts = append(schs, sch), append(starts, start)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		for i, sch := range schs {
			if !typeOnlyValid(starts[i], doc) {
				continue
			}
			inst, err := decodeJSON(doc)
			if err != nil {
				t.Fatalf("the quick path accepted %q, which is not JSON: %v", doc, err)
			}
			if probs := sch.validate(inst); len(probs) > 0 {
				t.Fatalf("the quick path accepted %q as %s; the validator says %v", doc, bytes.TrimSpace(doc), probs)
			}
		}
	})
}

// TestTypeOnlyBuiltin checks that the built-in TEXT type takes the quick
// path (its schema names only the string type).
func TestTypeOnlyBuiltin(t *testing.T) {
	if err := wire.load(); err != nil {
		t.Fatal(err)
	}
	start, ok := typeOnly.Load(wire.byName["types/"+TypeText])
	if !ok || start.(byte) != '"' {
		t.Fatalf("TEXT's schema is not known as type-only (%v, %v)", start, ok)
	}
}
