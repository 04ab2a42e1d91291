package schemas

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestExecutionContextReadWrite(t *testing.T) {
	c := NewExecutionContext(nil)
	if err := c.Write("images", FromIDs(ContentImages, "a", "b"), TypeFileIDs, "ImageSearchAgent"); err != nil {
		t.Fatal(err)
	}
	v, err := c.Read("images", TypeFileIDs)
	if err != nil {
		t.Fatal(err)
	}
	if v.Source != "ImageSearchAgent" || v.ContentTypeHint != ContentImages || v.ProducedAt.IsZero() {
		t.Errorf("provenance lost: %+v", v)
	}
	if _, err := c.Read("images", TypeText); !errors.Is(err, ErrTypeMismatch) {
		t.Errorf("wrong type: %v", err)
	}
	if _, err := c.Read("nothing", ""); !errors.Is(err, ErrSlotNotFound) {
		t.Errorf("missing slot: %v", err)
	}
	if err := c.Write("bad", 42, TypeText, "x"); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("a number as TEXT: %v", err)
	}
	if c.Has("bad") {
		t.Error("an invalid write left a slot behind")
	}
}

func TestExecutionContextCheckpointRestore(t *testing.T) {
	c := NewExecutionContext(nil)
	_ = c.Write("images", FromIDs(ContentImages, "a", "b"), TypeFileIDs, "search")
	_ = c.Write("note", "hello", TypeText, "summarize")
	_ = c.Write("cats", Categorization{Categories: map[string][]string{"sunset": {"a"}}}, TypeCategorization, "analysis")
	c.SetParams(map[string]any{"query": "sunset"})
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	back := NewExecutionContext(nil)
	if err := json.Unmarshal(raw, back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Slots(), back.Slots()) {
		t.Fatalf("slots differ after restore:\n%v\n%v", c.Slots(), back.Slots())
	}
	if back.Param("query") != "sunset" {
		t.Errorf("params lost: %v", back.Params())
	}
	fc, err := back.Files("images")
	if err != nil || !reflect.DeepEqual(fc.IDs(), []string{"a", "b"}) {
		t.Errorf("Files after restore: %v %v", fc.IDs(), err)
	}
	// A checkpoint with an invalid slot is refused whole.
	bad := []byte(`{"slots":[{"name":"x","data_type":"TEXT","value":1}]}`)
	keep := NewExecutionContext(nil)
	_ = keep.Write("kept", "yes", TypeText, "t")
	if err := json.Unmarshal(bad, keep); !errors.Is(err, ErrInvalidValue) {
		t.Fatalf("restore of a bad checkpoint: %v", err)
	}
	if !keep.Has("kept") {
		t.Error("a failed restore wiped the context")
	}
}

func FuzzTypedValueDecode(f *testing.F) {
	f.Add([]byte(`{"data_type":"FILE_IDS","content_type_hint":"images","value":{"ids":["a"]},"source":"s","produced_at":"2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"data_type":"TEXT","value":"hi"}`))
	f.Add([]byte(`{"data_type":"CATEGORIZATION","value":{"categories":{"x":["a"]}}}`))
	f.Add([]byte(`{"value":null}`))
	reg := NewRegistry()
	f.Fuzz(func(t *testing.T, in []byte) {
		var v TypedValue
		if err := json.Unmarshal(in, &v); err != nil {
			return
		}
		verr := reg.ValidateValue("fuzz", "v", v)
		if verr != nil {
			return
		}
		// A valid value re-encodes and stays valid, and FILE_IDS decode.
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("valid value does not encode: %v", err)
		}
		var back TypedValue
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if err := reg.ValidateValue("fuzz", "v", back); err != nil {
			t.Fatalf("valid value became invalid after a round trip: %v", err)
		}
		if v.DataType == TypeFileIDs {
			if _, err := v.Files(); err != nil && !errors.Is(err, ErrInvalidValue) {
				t.Fatalf("Files: %v", err)
			}
		}
	})
}
