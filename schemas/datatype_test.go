package schemas

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestBuiltinTypes(t *testing.T) {
	r := NewRegistry()
	want := []string{TypeAnalysisResult, TypeCategorization, TypeChunks, TypeCrossRef, TypeEvaluation, TypeFileIDs, TypeFolderResult, TypeText}
	if got := r.Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Names = %v, want %v", got, want)
	}
	for _, name := range want {
		def, _ := r.Lookup(name)
		if len(def.Schema) == 0 || def.Description == "" {
			t.Errorf("%s has no schema or description", name)
		}
		mergeable := name == TypeFileIDs || name == TypeCategorization || name == TypeChunks
		if r.Mergeable(name) != mergeable || def.Mergeable != mergeable {
			t.Errorf("%s: mergeable = %v, want %v", name, r.Mergeable(name), mergeable)
		}
	}
}

func TestRegistryValidate(t *testing.T) {
	r := NewRegistry()
	valid := map[string]string{
		TypeFileIDs:        `{"ids":["a","b"],"content_type":"images","count":2}`,
		TypeCategorization: `{"categories":{"sunset":["a"],"forest":["b"]}}`,
		TypeFolderResult:   `{"folders":{"sunset":["a"]},"moved":1}`,
		TypeAnalysisResult: `{"items":[{"id":"a","labels":["warm"],"features":{"hue":20}}]}`,
		TypeText:           `"hello"`,
		TypeCrossRef:       `{"links":[{"from":"a","to":"b","relation":"mentions"}]}`,
	}
	for typ, v := range valid {
		if err := r.Validate(typ, json.RawMessage(v)); err != nil {
			t.Errorf("%s %s: %v", typ, v, err)
		}
	}
	invalid := []struct{ typ, value, field, problem string }{
		{TypeFileIDs, `{"ids":[1]}`, "/ids/0", "want string"},
		{TypeFileIDs, `{"content_type":"images"}`, "", "missing"},
		{TypeCategorization, `{"categories":{"sunset":"a"}}`, "/categories/sunset", "want array"},
		{TypeCategorization, `{}`, "", "categories"},
		{TypeFolderResult, `{"folders":{},"moved":-1}`, "/moved", "minimum"},
		{TypeAnalysisResult, `{"items":[{"labels":[]}]}`, "/items/0", "id"},
		{TypeText, `42`, "", "want string"},
		{TypeCrossRef, `{"links":[{"from":"a","to":"b"}]}`, "/links/0", "relation"},
		{TypeText, `not json`, "", "not valid JSON"},
	}
	for _, tc := range invalid {
		err := r.ValidateValue("AnalysisAgent", "out", TypedValue{DataType: tc.typ, Value: json.RawMessage(tc.value)})
		var ve *ValueError
		if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidValue) {
			t.Errorf("%s %s: err = %v, want a *ValueError", tc.typ, tc.value, err)
			continue
		}
		msg := err.Error()
		for _, want := range []string{tc.typ, "AnalysisAgent", tc.field, tc.problem} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s %s: error %q does not mention %q", tc.typ, tc.value, msg, want)
			}
		}
	}
	if err := r.Validate("NOPE", json.RawMessage(`1`)); !errors.Is(err, ErrUnknownDataType) {
		t.Errorf("unknown type: %v", err)
	}
}

func TestRegistryMerge(t *testing.T) {
	r := NewRegistry()
	got, err := r.Merge(TypeFileIDs, json.RawMessage(`{"ids":["a","b"],"content_type":"images"}`), json.RawMessage(`{"ids":["b","c"],"content_type":"images"}`))
	if err != nil {
		t.Fatal(err)
	}
	var fc FileCollection
	if err := json.Unmarshal(got, &fc); err != nil || !reflect.DeepEqual(fc.IDs(), []string{"a", "b", "c"}) || fc.ContentType() != ContentImages {
		t.Fatalf("merged FILE_IDS = %s (%v)", got, err)
	}

	got, err = r.Merge(TypeCategorization,
		json.RawMessage(`{"categories":{"sunset":["a","b"],"forest":["f"]},"method":"features"}`),
		json.RawMessage(`{"categories":{"sunset":["b","c"],"night":["n"]},"method":"features"}`))
	if err != nil {
		t.Fatal(err)
	}
	var cat Categorization
	_ = json.Unmarshal(got, &cat)
	want := map[string][]string{"sunset": {"a", "b", "c"}, "forest": {"f"}, "night": {"n"}}
	if !reflect.DeepEqual(cat.Categories, want) || cat.Method != "features" {
		t.Fatalf("merged CATEGORIZATION = %+v", cat)
	}

	if _, err := r.Merge(TypeText, json.RawMessage(`"a"`), json.RawMessage(`"b"`)); !errors.Is(err, ErrNotMergeable) {
		t.Errorf("TEXT merge: %v, want ErrNotMergeable", err)
	}
	if _, err := r.Merge(TypeFileIDs, json.RawMessage(`{"ids":[3]}`), json.RawMessage(`{"ids":["a"]}`)); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("merge of an invalid operand: %v", err)
	}
	mv, err := r.MergeValues(FilesValue(FromIDs(ContentImages, "a"), "x"), FilesValue(FromIDs(ContentDocuments, "d"), "y"), "router")
	if err != nil || mv.ContentTypeHint != ContentMixed {
		t.Errorf("MergeValues of images and documents: hint %q, err %v", mv.ContentTypeHint, err)
	}
}

func TestRegisterCustomType(t *testing.T) {
	r := NewRegistry()
	scores := DataType{Name: "SCORES", Description: "scores", Schema: json.RawMessage(`{"type":"object","additionalProperties":{"type":"number"}}`),
		Slots: map[string]string{"": "current_scores"}, Unit: [2]string{"score", "scores"}}
	if err := r.Register(scores); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate("SCORES", json.RawMessage(`{"a":1}`)); err != nil {
		t.Error(err)
	}
	if err := r.Validate("SCORES", json.RawMessage(`{"a":"x"}`)); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("bad SCORES value: %v", err)
	}
	if slot, ok := r.SlotFor("SCORES", "anything"); !ok || slot != "current_scores" {
		t.Errorf("SlotFor(SCORES) = %q, %v", slot, ok)
	}
	if got := r.Describe(TypedValue{DataType: "SCORES", Value: json.RawMessage(`{"a":1,"b":2}`)}); got != "2 scores" {
		t.Errorf("Describe = %q, want 2 scores", got)
	}
	// A custom type may reference the shipped schemas.
	if err := r.Register(DataType{Name: "PICKS", Schema: json.RawMessage(`{"$ref":"https://agentmesh.dev/schemas/file-collection.schema.json"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate("PICKS", json.RawMessage(`{"ids":[1]}`)); err == nil {
		t.Error("PICKS accepted a number as an ID")
	}
	err := r.Register(DataType{Name: "bad name", Schema: json.RawMessage(`{"type":`), Slots: map[string]string{"": "no good"}})
	for _, want := range []string{`"bad name"`, `slot "no good"`, "not valid JSON"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Register of a bad definition: %v, want it to mention %s", err, want)
		}
	}
	if err := r.Register(DataType{Name: TypeText}); err == nil {
		t.Error("replacing a built-in was allowed")
	}
	if err := r.Register(DataType{Name: "OTHER", Slots: map[string]string{"": "current_text"}}); err == nil || !strings.Contains(err.Error(), "already filled by data type TEXT") {
		t.Errorf("a second type in TEXT's slot: %v", err)
	}
}

func TestDeclareOnTheWire(t *testing.T) {
	r := NewRegistry()
	freq := DataTypeDefinition{Name: "WORD_FREQUENCIES", Description: "word counts", Merge: "sum",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":{"type":"integer","minimum":1}}`)}
	if err := r.Declare(freq, "NodeWordCount"); err != nil {
		t.Fatal(err)
	}
	// The same definition again (other whitespace in the schema) is no change.
	again := freq
	again.Schema = json.RawMessage(`{ "type": "object", "additionalProperties": {"minimum": 1, "type": "integer"} }`)
	if err := r.Declare(again, "NodeWordCount"); err != nil {
		t.Errorf("declaring the same type again: %v", err)
	}
	def, ok := r.Lookup("WORD_FREQUENCIES")
	if !ok || !def.Mergeable || def.Merge != "sum" || def.Slot != "current_word_frequencies" {
		t.Errorf("Lookup = %+v, %v", def, ok)
	}
	m, err := r.Merge("WORD_FREQUENCIES", json.RawMessage(`{"a":1,"b":2}`), json.RawMessage(`{"b":3,"c":1}`))
	if err != nil || !jsonEqual(m, json.RawMessage(`{"a":1,"b":5,"c":1}`)) {
		t.Errorf("sum merge = %s, %v", m, err)
	}
	if err := r.Validate("WORD_FREQUENCIES", json.RawMessage(`{"a":0}`)); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("a count of 0 passed the declared schema: %v", err)
	}
	refused := []struct {
		def  DataTypeDefinition
		want string
	}{
		{DataTypeDefinition{Name: "WORD_FREQUENCIES", Description: "word counts", Merge: "append"}, `differs from the one NodeWordCount declared (schema, merge "sum" vs "append")`},
		{DataTypeDefinition{Name: TypeText, Description: "mine"}, "built in"},
		{DataTypeDefinition{Name: "X", Description: "x", Merge: "concat"}, `merge rule "concat" does not exist; use one of append, object, sum, union`},
		{DataTypeDefinition{Name: "X", Description: "x", Mergeable: true}, "mergeable without a merge rule"},
		{DataTypeDefinition{Name: "X"}, "description is empty"},
		{DataTypeDefinition{Name: "X", Description: "x", Slot: "current_text"}, "already filled by data type TEXT"},
		{DataTypeDefinition{Name: "X", Description: "x", Schema: json.RawMessage(`{"type":7}`)}, "data type X"},
	}
	for _, c := range refused {
		err := r.Declare(c.def, "Other")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "Other") {
			t.Errorf("Declare(%+v) = %v, want an error naming Other and %q", c.def, err, c.want)
		}
	}
	if _, ok := r.Lookup("X"); ok {
		t.Error("a refused declaration was registered")
	}
}

func TestMergeRules(t *testing.T) {
	cases := []struct{ rule, a, b, want string }{
		{"append", `[1,2]`, `[2,3]`, `[1,2,2,3]`},
		{"union", `[{"x":1},2]`, `[{"x":1},3]`, `[{"x":1},2,3]`},
		{"object", `{"a":{"x":1,"y":1},"b":1}`, `{"a":{"y":2},"c":[1]}`, `{"a":{"x":1,"y":2},"b":1,"c":[1]}`},
		{"sum", `{"a":1,"b":0.5}`, `{"a":2,"b":1,"c":7}`, `{"a":3,"b":1.5,"c":7}`},
	}
	for _, c := range cases {
		got, err := mergeRules[c.rule](json.RawMessage(c.a), json.RawMessage(c.b))
		if err != nil || !jsonEqual(got, json.RawMessage(c.want)) {
			t.Errorf("%s(%s, %s) = %s, %v; want %s", c.rule, c.a, c.b, got, err, c.want)
		}
	}
	if _, err := mergeRules["sum"](json.RawMessage(`{"a":"x"}`), json.RawMessage(`{}`)); err == nil {
		t.Error("sum merged a string")
	}
	// A merge that breaks the declared schema is refused, not stored.
	r := NewRegistry()
	if err := r.Declare(DataTypeDefinition{Name: "PAIR", Description: "at most two", Merge: "append",
		Schema: json.RawMessage(`{"type":"array","maxItems":2}`)}, "A"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Merge("PAIR", json.RawMessage(`[1,2]`), json.RawMessage(`[3]`)); !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "merged value") {
		t.Errorf("a merge breaking maxItems: %v", err)
	}
}

func TestDescribeValues(t *testing.T) {
	r := NewRegistry()
	cases := []struct {
		v    TypedValue
		want string
		n    int
	}{
		{TypedValue{DataType: TypeFileIDs, ContentTypeHint: ContentImages, Value: json.RawMessage(`{"ids":["a"],"content_type":"images","count":1}`)}, "1 image", 1},
		{TypedValue{DataType: TypeFileIDs, Value: json.RawMessage(`{"ids":["a","b"],"content_type":"mixed","count":2}`)}, "2 files", 2},
		{TypedValue{DataType: TypeCategorization, Value: json.RawMessage(`{"categories":{"x":["a"]}}`)}, "1 category", 1},
		{TypedValue{DataType: TypeFolderResult, Value: json.RawMessage(`{"folders":{"x":["a"],"y":["b"]},"moved":1}`)}, "2 folders (1 file moved)", 2},
		{TypedValue{DataType: TypeText, Value: json.RawMessage(`"héllo"`)}, "text of 5 characters", 1},
		{TypedValue{DataType: "UNKNOWN", Value: json.RawMessage(`[1,2,3]`)}, "3 values", 3},
	}
	for _, c := range cases {
		if got := r.Describe(c.v); got != c.want {
			t.Errorf("Describe(%s) = %q, want %q", c.v.Value, got, c.want)
		}
		if got := r.Count(c.v); got != c.n {
			t.Errorf("Count(%s) = %d, want %d", c.v.Value, got, c.n)
		}
	}
	facts := r.Facts(TypedValue{DataType: TypeCategorization, Value: json.RawMessage(`{"categories":{"x":["a","b"]}}`)})
	if !reflect.DeepEqual(facts, map[string]any{"categories": map[string]int{"x": 2}}) {
		t.Errorf("Facts = %v", facts)
	}
}

// A contract may use the data types it declares; every problem of its
// declarations is reported with the others.
func TestContractDeclaresDataTypes(t *testing.T) {
	c := AgentContract{Name: "Counter", Capability: CapAnalysis, Description: "counts",
		DataTypes: []DataTypeDefinition{
			{Name: "FREQ", Description: "counts", Merge: "sum", Schema: json.RawMessage(`{"type":"object"}`)},
			{Name: TypeText, Description: "mine"},
			{Name: "ODD", Description: "odd", Merge: "zip"},
			{Name: "FREQ", Description: "again"},
		},
		Inputs:  []TypedInput{{Name: "in", DataType: "FREQ"}},
		Outputs: []TypedOutput{{Name: "out", DataType: "FREQ", Mergeable: true}, {Name: "other", DataType: "NOPE"}}}
	err := c.ValidateWith(NewRegistry())
	for _, want := range []string{"TEXT is a built-in data type", `merge rule "zip" does not exist`, "FREQ is declared twice", `unknown data type "NOPE"; declare it in data_types`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateWith: %v; want it to mention %s", err, want)
		}
	}
	if err != nil && (strings.Contains(err.Error(), `"FREQ";`) || strings.Contains(err.Error(), "(out): declared mergeable")) {
		t.Errorf("the declared FREQ was not taken as known and mergeable: %v", err)
	}
}

// A data type declared on the wire comes from any agent: whatever its
// JSON, declaring it ends in a registered type that validates and merges
// without panicking, or in an error, never in a half-registered type.
func FuzzDeclareDataType(f *testing.F) {
	for _, s := range []string{
		`{"name":"FREQ","description":"counts","merge":"sum","schema":{"type":"object","additionalProperties":{"type":"integer"}}}`,
		`{"name":"LIST","description":"items","merge":"union","schema":{"type":"array"}}`,
		`{"name":"X","description":"x","slot":"current_text"}`,
		`{"name":"TEXT","description":"mine"}`,
		`{"name":"Y","description":"y","schema":{"$ref":"https://agentmesh.dev/schemas/file-collection.schema.json"}}`,
		`{"name":"Z","description":"z","merge":"object","schema":{"type":"object","maxProperties":1}}`,
		`{"name":"","schema":7}`,
	} {
		f.Add([]byte(s), []byte(`{"a":1}`), []byte(`{"a":2,"b":3}`))
	}
	f.Fuzz(func(t *testing.T, raw, a, b []byte) {
		var def DataTypeDefinition
		if json.Unmarshal(raw, &def) != nil {
			return
		}
		r := NewRegistry()
		before := r.Names()
		if err := r.Declare(def, "Fuzz"); err != nil {
			if !reflect.DeepEqual(r.Names(), before) {
				t.Fatalf("a refused declaration changed the registry: %v", r.Names())
			}
			return
		}
		if _, ok := r.Lookup(def.Name); !ok {
			t.Fatalf("declared %q is not registered", def.Name)
		}
		_ = r.Validate(def.Name, a)
		if r.Mergeable(def.Name) {
			if m, err := r.Merge(def.Name, a, b); err == nil {
				if err := r.Validate(def.Name, m); err != nil {
					t.Fatalf("a merge that fails the schema was returned: %s: %v", m, err)
				}
			}
		}
		_ = r.Describe(TypedValue{DataType: def.Name, Value: a})
	})
}
