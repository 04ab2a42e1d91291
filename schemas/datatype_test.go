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
	want := []string{TypeAnalysisResult, TypeCategorization, TypeCrossRef, TypeFileIDs, TypeFolderResult, TypeText}
	if got := r.Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Names = %v, want %v", got, want)
	}
	for _, name := range want {
		def, _ := r.Lookup(name)
		if len(def.Schema) == 0 || def.Description == "" {
			t.Errorf("%s has no schema or description", name)
		}
		mergeable := name == TypeFileIDs || name == TypeCategorization
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
	def := DataTypeDefinition{Name: "SCORES", Description: "scores", Schema: json.RawMessage(`{"type":"object","additionalProperties":{"type":"number"}}`)}
	if err := r.Register(def, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate("SCORES", json.RawMessage(`{"a":1}`)); err != nil {
		t.Error(err)
	}
	if err := r.Validate("SCORES", json.RawMessage(`{"a":"x"}`)); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("bad SCORES value: %v", err)
	}
	// A custom type may reference the shipped schemas.
	if err := r.Register(DataTypeDefinition{Name: "PICKS", Schema: json.RawMessage(`{"$ref":"https://agentmesh.dev/schemas/file-collection.schema.json"}`)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate("PICKS", json.RawMessage(`{"ids":[1]}`)); err == nil {
		t.Error("PICKS accepted a number as an ID")
	}
	err := r.Register(DataTypeDefinition{Name: "bad name", Mergeable: true, Schema: json.RawMessage(`{"type":`)}, nil)
	for _, want := range []string{`"bad name"`, "no merge function", "not valid JSON"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Register of a bad definition: %v, want it to mention %s", err, want)
		}
	}
	if err := r.Register(DataTypeDefinition{Name: TypeText}, nil); err == nil {
		t.Error("replacing a built-in was allowed")
	}
}
