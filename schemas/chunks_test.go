package schemas

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestChunksValue(t *testing.T) {
	r := NewRegistry()
	good := `[{"text":"Refunds within 30 days.","file_id":"f1","position":0,"score":0.5,"filename":"refund-policy.md","heading":"Refund window"}]`
	if err := r.Validate(TypeChunks, json.RawMessage(good)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`[{"text":"x","file_id":"","position":0,"score":1}]`,
		`[{"text":"x","file_id":"f","position":-1,"score":1}]`,
		`[{"text":"x","file_id":"f","score":1}]`,
		`{"chunks":[]}`,
	} {
		if err := r.Validate(TypeChunks, json.RawMessage(bad)); err == nil {
			t.Errorf("%s validated", bad)
		}
	}
	if slot, ok := r.SlotFor(TypeChunks, ""); !ok || slot != "current_chunks" {
		t.Errorf("slot %q %v", slot, ok)
	}
	v := TypedValue{DataType: TypeChunks, Value: json.RawMessage(good)}
	if got := r.Describe(v); got != "1 chunk" {
		t.Errorf("Describe = %q", got)
	}
	facts, _ := json.Marshal(r.Facts(v))
	if !strings.Contains(string(facts), "Refunds within 30 days.") || !strings.Contains(string(facts), "refund-policy.md #0") {
		t.Errorf("facts do not show the passage: %s", facts)
	}
}

func TestMergeChunks(t *testing.T) {
	a := Chunks{{Text: "a0", FileID: "a", Position: 0, Score: 3}, {Text: "b1", FileID: "b", Position: 1, Score: 1}}
	b := Chunks{{Text: "b1", FileID: "b", Position: 1, Score: 5}, {Text: "c0", FileID: "c", Position: 0, Score: 2}}
	want := Chunks{{Text: "b1", FileID: "b", Position: 1, Score: 5}, {Text: "a0", FileID: "a", Position: 0, Score: 3}, {Text: "c0", FileID: "c", Position: 0, Score: 2}}
	if got := MergeChunks(a, b); !reflect.DeepEqual(got, want) {
		t.Errorf("MergeChunks = %+v", got)
	}
	ra, _ := json.Marshal(a)
	rb, _ := json.Marshal(b)
	m, err := NewRegistry().Merge(TypeChunks, ra, rb)
	if err != nil {
		t.Fatal(err)
	}
	var got Chunks
	if err := json.Unmarshal(m, &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("registry merge = %s (%v)", m, err)
	}
}
