package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The package's validator is checked against a general-purpose JSON Schema
// library (santhosh-tekuri/jsonschema, linked by this test only): on every
// schema and document below, and on what the fuzzer makes of them, both
// must agree on valid or not.

// differentialSchemas cover each keyword the validator implements.
var differentialSchemas = []string{
	`true`, `false`, `{}`,
	`{"type":"string"}`, `{"type":"integer"}`, `{"type":"number"}`, `{"type":["string","null"]}`,
	`{"type":"object","properties":{"a":{"type":"integer","minimum":1},"b":{"type":"string","maxLength":3}},"required":["a"],"additionalProperties":false}`,
	`{"type":"object","additionalProperties":{"type":"number","exclusiveMinimum":0}}`,
	`{"patternProperties":{"^x-":{"type":"boolean"}},"additionalProperties":{"type":"string"}}`,
	`{"propertyNames":{"pattern":"^[a-z]+$"},"minProperties":1,"maxProperties":2}`,
	`{"dependentRequired":{"a":["b","c"]},"dependentSchemas":{"b":{"required":["d"]}}}`,
	`{"type":"array","items":{"type":"string","minLength":1},"minItems":1,"maxItems":3,"uniqueItems":true}`,
	`{"prefixItems":[{"type":"integer"},{"type":"string"}],"items":false}`,
	`{"contains":{"const":1},"minContains":2,"maxContains":3}`,
	`{"contains":{"type":"null"}}`,
	`{"enum":["a",1,null,[1,2],{"k":1}]}`, `{"const":{"a":[1,2.0]}}`, `{"const":"x"}`,
	`{"pattern":"^[0-9]{3}$"}`, `{"format":"date-time"}`, `{"format":"date"}`, `{"format":"email"}`,
	`{"format":"ipv4"}`, `{"format":"uuid"}`, `{"format":"uri"}`,
	`{"multipleOf":0.5,"maximum":10,"exclusiveMaximum":9.5}`,
	`{"allOf":[{"type":"object"},{"required":["a"]}]}`,
	`{"anyOf":[{"type":"string"},{"type":"integer","minimum":3}]}`,
	`{"oneOf":[{"type":"integer"},{"minimum":2}]}`,
	`{"not":{"type":"string"}}`,
	`{"if":{"properties":{"kind":{"const":"n"}}},"then":{"required":["n"]},"else":{"required":["s"]}}`,
	`{"$defs":{"pos":{"type":"integer","minimum":1}},"type":"array","items":{"$ref":"#/$defs/pos"}}`,
	`{"type":"object","properties":{"next":{"$ref":"#"},"v":{"type":"integer"}},"additionalProperties":false}`,
	`{"$ref":"https://agentmesh.dev/schemas/file-collection.schema.json"}`,
	`{"$ref":"https://agentmesh.dev/schemas/typed-value.schema.json"}`,
}

var differentialDocs = []string{
	`null`, `true`, `0`, `1`, `1.0`, `2.5`, `3`, `9.5`, `10`, `-1`, `""`, `"a"`, `"abcd"`, `"123"`, `"12a"`,
	`"2024-01-02T03:04:05Z"`, `"2024-01-02T03:04:05.5+01:00"`, `"2024-13-02T03:04:05Z"`, `"2024-01-02"`,
	`"a@b.c"`, `"nope"`, `"10.0.0.1"`, `"::1"`, `"123e4567-e89b-12d3-a456-426614174000"`, `"http://x/y"`, `"/rel"`,
	`[]`, `[1]`, `[1,1]`, `[1,1,1,1]`, `["a","b"]`, `["a","a"]`, `["", "b"]`, `[1,"x"]`, `[1,"x",2]`, `[null]`, `[1,2]`, `[1,1.0]`, `[{"a":1},{"a":1.0}]`, `[{"a":1},{"a":2}]`, `[[1],[1]]`, `["1",1]`, `[true,"true"]`,
	`{}`, `{"a":1}`, `{"a":0}`, `{"a":1,"b":"abcd"}`, `{"a":1,"c":1}`, `{"a":"1"}`, `{"x-y":true,"z":"s"}`, `{"x-y":1}`,
	`{"ab":1,"cd":2,"ef":3}`, `{"A":1}`, `{"a":1,"b":2,"c":3}`, `{"b":1}`, `{"b":1,"d":1}`, `{"k":1}`,
	`{"a":[1,2]}`, `{"kind":"n"}`, `{"kind":"n","n":1}`, `{"kind":"s"}`, `{"s":1}`,
	`{"next":{"next":{"v":1}},"v":2}`, `{"next":{"w":1}}`,
	`{"ids":["a","b"],"content_type":"images"}`, `{"ids":[1]}`, `{"data_type":"TEXT","value":"x"}`, `{"data_type":"TEXT"}`,
}

// reference compiles raw with the reference library, the embedded
// documents resolvable as they are for the package's own compiler.
func reference(t testing.TB, raw string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	err := fs.WalkDir(Files, "json", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := Files.ReadFile(p)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return err
		}
		return c.AddResource(SchemaBaseURL+strings.TrimPrefix(p, "json/"), doc)
	})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("mem://reference/x", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem://reference/x")
	if err != nil {
		t.Fatalf("reference library: %s does not compile: %v", raw, err)
	}
	return sch
}

// agree fails t when the two validators disagree on doc.
func agree(t testing.TB, raw string, own *schemaNode, ref *jsonschema.Schema, doc []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return // not a JSON document: check answers "not valid JSON"
	}
	refErr := ref.Validate(inst)
	probs := check(own, doc)
	if (refErr == nil) != (len(probs) == 0) {
		t.Errorf("schema %s, document %s: the package's validator says %v, the reference library %v", raw, doc, probs, refErr)
	}
}

func TestValidatorAgreesWithAReferenceLibrary(t *testing.T) {
	checked := 0
	for i, raw := range differentialSchemas {
		own, err := compileSchemaNow(fmt.Sprintf("diff/%d", i), []byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		ref := reference(t, raw)
		for _, doc := range differentialDocs {
			agree(t, raw, own, ref, []byte(doc))
			checked++
		}
	}
	// The wire documents too: each embedded schema against documents
	// that pass and fail it.
	for _, name := range SchemaNames() {
		ref := reference(t, fmt.Sprintf(`{"$ref":%q}`, SchemaBaseURL+name+".schema.json"))
		for _, doc := range append(differentialDocs, wireSamples...) {
			agree(t, name, wire.byName[name], ref, []byte(doc))
			checked++
		}
	}
	t.Logf("%d schema and document pairs agree", checked)
}

// wireSamples are documents near the wire shapes' edges.
var wireSamples = []string{
	`{"inputs":{"text":{"data_type":"TEXT","value":"hi"}}}`,
	`{"inputs":{"text":{"data_type":"TEXT"}},"timeout_ms":-1}`,
	`{"success":true,"outputs":{"text":{"data_type":"TEXT","value":"x"}}}`,
	`{"success":false,"error":{"code":"x","message":"m"}}`,
	`{"name":"A","version":"1.0.0","capability":"transformation","description":"d","inputs":[{"name":"text","data_type":"TEXT","required":true}],"outputs":[{"name":"text","data_type":"TEXT"}]}`,
	`{"name":"A","inputs":[{"name":"","data_type":"TEXT"}]}`,
	`{"name":"p","steps":[{"id":"a","agent":"X"}]}`,
	`{"name":"p","steps":[{"id":"a","kind":"loop","spec":{"name":"q","steps":[]}}]}`,
	`{"message":"hi"}`, `{"message":""}`,
	`{"ids":["a"],"content_type":"images","count":1}`,
	`{"categories":{"x":["a"]},"method":"features"}`,
	`{"runid":"r","status":"completed","at":"2024-01-02T03:04:05Z"}`,
	`{"runid":"r","status":"completed","at":"yesterday"}`,
}

// TestValidatorMessages checks the problems people read: where and what.
func TestValidatorMessages(t *testing.T) {
	for _, c := range []struct{ schema, doc, want string }{
		{`{"type":"object","required":["a","b"]}`, `{}`, `missing properties 'a', 'b'`},
		{`{"properties":{"a":{"type":"integer"}}}`, `{"a":"x"}`, `/a: got string, want integer`},
		{`{"additionalProperties":false}`, `{"x":1}`, `additional properties 'x' not allowed`},
		{`{"properties":{"op":{"enum":["up","down"]}}}`, `{"op":"sideways"}`, `/op: value must be one of 'up', 'down'`},
		{`{"items":{"minimum":1}}`, `[1,0]`, `/1: minimum: got 0, want 1`},
		{`{"minLength":2}`, `"a"`, `minLength: got 1, want 2`},
		{`{"pattern":"^a"}`, `"b"`, `'b' does not match pattern '^a'`},
		{`{"format":"date-time"}`, `"yesterday"`, `'yesterday' is not valid date-time: less than 20 characters long`},
		{`{"const":3}`, `4`, `value must be 3`},
		{`false`, `1`, `false schema`},
	} {
		sch, err := compileSchemaNow("msg", []byte(c.schema))
		if err != nil {
			t.Fatal(err)
		}
		probs := check(sch, []byte(c.doc))
		var got []string
		for _, p := range probs {
			got = append(got, p.String())
		}
		if strings.Join(got, "; ") != c.want {
			t.Errorf("schema %s, document %s: problems %q, want %q", c.schema, c.doc, got, c.want)
		}
	}
}

// TestValidatorRefusesBadSchemas checks that a schema that is not one is
// refused when compiled, with where and why.
func TestValidatorRefusesBadSchemas(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{`{"type":"strin"}`, `at /type: type "strin" is not a JSON type`},
		{`{"type":12}`, `at /type: type must be a string`},
		{`{"minLength":-1}`, `at /minLength: minLength must be a non-negative integer`},
		{`{"properties":{"a":{"pattern":"("}}}`, `at /properties/a/pattern: pattern "(" does not compile`},
		{`{"required":"a"}`, `at /required: required must be an array of strings`},
		{`{"items":7}`, `at /items: a schema must be an object or a boolean, not integer`},
		{`{"$ref":"#/$defs/missing"}`, `nothing at "/$defs/missing"`},
		{`{"$ref":"https://elsewhere.example/x.json"}`, `no such document`},
		{`{"unevaluatedProperties":false}`, `keyword unevaluatedProperties is not supported`},
		{`{"anyOf":[]}`, `at /anyOf: anyOf must be a non-empty array of schemas`},
		{`{"$ref":"#"}`, `$ref cycle`},
		{`{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"not":{"$ref":"#/$defs/a"}}},"items":{"$ref":"#/$defs/a"}}`, `$ref cycle`},
	} {
		_, err := compileSchemaNow("bad", []byte(c.schema))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("schema %s: error %v, want one containing %q", c.schema, err, c.want)
		}
	}
}

// FuzzValidator checks that the package's validator and the reference
// library agree on every document the fuzzer makes, for each schema of the
// differential table.
func FuzzValidator(f *testing.F) {
	for _, d := range differentialDocs {
		f.Add([]byte(d))
	}
	type pair struct {
		raw string
		own *schemaNode
		ref *jsonschema.Schema
	}
	var pairs []pair
	for i, raw := range differentialSchemas {
		own, err := compileSchemaNow(fmt.Sprintf("fuzz/%d", i), []byte(raw))
		if err != nil {
			f.Fatal(err)
		}
		pairs = append(pairs, pair{raw, own, reference(f, raw)})
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		for _, p := range pairs {
			agree(t, p.raw, p.own, p.ref, doc)
		}
	})
}

// BenchmarkValidateLargeCollection validates a FILE_IDS value of 100,000
// IDs (uniqueItems over all of them), with the package's validator and,
// for comparison, the reference library.
func BenchmarkValidateLargeCollection(b *testing.B) {
	ids := make([]string, 100000)
	for i := range ids {
		ids[i] = fmt.Sprintf("f-%020d", i)
	}
	doc, _ := json.Marshal(map[string]any{"ids": ids, "content_type": "images"})
	b.Run("own", func(b *testing.B) {
		r := NewRegistry()
		for b.Loop() {
			if err := r.Validate(TypeFileIDs, doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		ref := reference(b, `{"$ref":"https://agentmesh.dev/schemas/file-collection.schema.json"}`)
		for b.Loop() {
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
			if err == nil {
				err = ref.Validate(inst)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkValidateResult validates a small result document, as every
// task's result is, with both validators.
func BenchmarkValidateResult(b *testing.B) {
	doc := []byte(`{"agent":"ShoutAgent","success":true,"summary":"shouted","outputs":{"text":{"data_type":"TEXT","value":"HELLO","source":"ShoutAgent"}}}`)
	b.Run("own", func(b *testing.B) {
		for b.Loop() {
			if err := ValidateJSON(SchemaResult, doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		ref := reference(b, `{"$ref":"https://agentmesh.dev/schemas/result.schema.json"}`)
		for b.Loop() {
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
			if err == nil {
				err = ref.Validate(inst)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestValidatorConcurrentUse compiles and validates from many goroutines
// at once, as agents validate their tasks; run it with -race.
func TestValidatorConcurrentUse(t *testing.T) {
	r := NewRegistry()
	done := make(chan error, 8)
	for i := range 8 {
		go func() {
			var err error
			for j := range 50 {
				raw := fmt.Sprintf(`{"type":"object","properties":{"n":{"type":"integer","minimum":%d}},"required":["n"]}`, i)
				if _, cerr := compileSchema(fmt.Sprintf("conc/%d", j%3), []byte(raw)); cerr != nil {
					err = cerr
				}
				if verr := r.Validate(TypeFileIDs, []byte(`{"ids":["a","b"],"content_type":"images"}`)); verr != nil {
					err = verr
				}
				if r.Validate(TypeFileIDs, []byte(`{"ids":["a","a"]}`)) == nil {
					err = errors.New("duplicate ids accepted")
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
