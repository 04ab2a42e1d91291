package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestMerge(t *testing.T) {
	img := func(ids ...string) FileCollection { return FromIDs(ContentImages, ids...) }
	doc := func(ids ...string) FileCollection { return FromIDs(ContentDocuments, ids...) }
	tests := []struct {
		name     string
		in       []FileCollection
		wantIDs  []string
		wantType string
	}{
		{"nothing", nil, nil, ""},
		{"one", []FileCollection{img("a", "b")}, []string{"a", "b"}, ContentImages},
		{"disjoint keeps order", []FileCollection{img("a", "b"), img("c", "d")}, []string{"a", "b", "c", "d"}, ContentImages},
		{"overlap keeps first seen", []FileCollection{img("a", "b", "c"), img("c", "b", "e")}, []string{"a", "b", "c", "e"}, ContentImages},
		{"reverse overlap", []FileCollection{img("c", "b", "e"), img("a", "b", "c")}, []string{"c", "b", "e", "a"}, ContentImages},
		{"identical", []FileCollection{img("a", "b"), img("a", "b")}, []string{"a", "b"}, ContentImages},
		{"three way", []FileCollection{img("a"), img("b", "a"), img("c", "b")}, []string{"a", "b", "c"}, ContentImages},
		{"different types are mixed", []FileCollection{img("a"), doc("d")}, []string{"a", "d"}, ContentMixed},
		{"empty first takes the other type", []FileCollection{img(), doc("d")}, []string{"d"}, ContentDocuments},
		{"empty second keeps type", []FileCollection{img("a"), doc()}, []string{"a"}, ContentImages},
		{"mixed stays mixed", []FileCollection{img("a"), doc("d"), img("e")}, []string{"a", "d", "e"}, ContentMixed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Merge(tt.in...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.IDs(), tt.wantIDs) {
				t.Errorf("IDs = %v, want %v", got.IDs(), tt.wantIDs)
			}
			if got.Count() != len(tt.wantIDs) {
				t.Errorf("Count = %d, want %d", got.Count(), len(tt.wantIDs))
			}
			if got.ContentType() != tt.wantType {
				t.Errorf("ContentType = %q, want %q", got.ContentType(), tt.wantType)
			}
		})
	}
}

func TestMergeDoesNotAliasInputs(t *testing.T) {
	a := FromIDs(ContentImages, "a", "b")
	b := FromIDs(ContentImages, "c")
	m, _ := Merge(a, b)
	ids := m.IDs()
	ids[0] = "changed"
	if a.IDs()[0] != "a" || m.IDs()[0] != "a" {
		t.Fatal("a caller's slice changed the collection")
	}
}

func TestMergeSpilledIsAnError(t *testing.T) {
	_, err := Merge(FromIDs(ContentImages, "a"), SpilledCollection("collections/abc", 10, ContentImages))
	if !errors.Is(err, ErrSpilled) {
		t.Fatalf("err = %v, want ErrSpilled", err)
	}
}

func TestFromIDsDropsDuplicatesAndEmpty(t *testing.T) {
	c := FromIDs(ContentLinks, "x", "", "y", "x")
	if got := c.IDs(); !reflect.DeepEqual(got, []string{"x", "y"}) {
		t.Fatalf("IDs = %v", got)
	}
}

func TestFileCollectionJSONRoundTrip(t *testing.T) {
	for _, c := range []FileCollection{
		FromIDs(ContentImages, "a", "b", "c").WithSource(CapSearch),
		FromIDs(ContentDocuments),
		SpilledCollection("collections/0123", 100000, ContentImages),
	} {
		raw, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateJSON(SchemaFileCollection, raw); err != nil {
			t.Errorf("%s fails its own schema: %v", raw, err)
		}
		var back FileCollection
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if !reflect.DeepEqual(back, c) && !(c.Count() == 0 && back.Count() == 0) {
			t.Errorf("round trip of %s: got %#v, want %#v", raw, back, c)
		}
	}
}

func TestFileCollectionDecodeErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"ids":["a","a"]}`, `ids[1] "a" appears twice`},
		{`{"ids":["a",""]}`, `ids[1] is empty`},
		{`{"ids":["a"],"count":2}`, `count is 2 but 1 ids`},
		{`{"collection_ref":"x"}`, `needs a non-negative count`},
		{`{"collection_ref":"x","count":1,"ids":["a"]}`, `both ids and collection_ref`},
		{`{"ids":"a"}`, `cannot unmarshal`},
	} {
		var c FileCollection
		err := json.Unmarshal([]byte(tc.in), &c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.in, err, tc.want)
		}
	}
}

func TestLargeCollectionKeepsOrder(t *testing.T) {
	ids := make([]string, 100000)
	for i := range ids {
		ids[i] = fmt.Sprintf("file-%06d", i)
	}
	c := FromIDs(ContentImages, ids...)
	raw, _ := json.Marshal(c)
	var back FileCollection
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.IDs(), ids) {
		t.Fatal("100,000 IDs did not survive a round trip in order")
	}
}

func FuzzFileCollectionDecode(f *testing.F) {
	f.Add([]byte(`{"ids":["a","b"],"content_type":"images","count":2}`))
	f.Add([]byte(`{"collection_ref":"collections/x","count":3,"content_type":"images"}`))
	f.Add([]byte(`{"ids":[]}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var c FileCollection
		if err := json.Unmarshal(in, &c); err != nil {
			return
		}
		raw, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("decoded %q but cannot encode it: %v", in, err)
		}
		var back FileCollection
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("re-decoding %s: %v", raw, err)
		}
		if back.Count() != c.Count() || !reflect.DeepEqual(back.IDs(), c.IDs()) || back.Ref() != c.Ref() {
			t.Fatalf("round trip changed %s into %s", in, raw)
		}
	})
}
