package state

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/schemas"
)

// TestApplyRunStateFromKeptMatchesDecoded checks that applying a change to
// the kept decoded state gives what applying it to a fresh decoding of the
// stored bytes gives, step after step (compaction and the size bound
// dropping values in place included), and leaves the kept state as it was.
func TestApplyRunStateFromKeptMatchesDecoded(t *testing.T) {
	s := New(nil, nil, WithMaxHistory(6), WithMaxAppliedTasks(5), WithMaxStateBytes(1500))
	step := func(i int) func(*schemas.ConversationState) error {
		return func(st *schemas.ConversationState) error {
			tv := schemas.TypedValue{DataType: schemas.TypeText, Value: json.RawMessage(fmt.Sprintf(` "value %d %s" `, i, "<&>")), Source: "A",
				ProducedAt: time.Unix(int64(i), 0).UTC()}
			st.Slots[fmt.Sprintf("s%d", i%3)] = tv
			st.History = append(st.History, schemas.HistoryEntry{At: tv.ProducedAt, Kind: "result", TaskID: fmt.Sprint("t", i),
				Outputs: map[string]schemas.TypedValue{"o": tv, "p": tv}})
			st.AppliedTasks = append(st.AppliedTasks, fmt.Sprint("t", i))
			return nil
		}
	}
	var raw []byte
	var kept *schemas.ConversationState
	for i := range 20 {
		var before []byte
		if kept != nil {
			before, _ = json.Marshal(kept)
		}
		fromKept, next, err := s.ApplyRunStateFrom("r1", raw, kept, step(i))
		if err != nil {
			t.Fatal(err)
		}
		fromRaw, err := s.ApplyRunState("r1", raw, step(i))
		if err != nil {
			t.Fatal(err)
		}
		if a, b := decodeNoTime(t, fromKept), decodeNoTime(t, fromRaw); !reflect.DeepEqual(a, b) {
			t.Fatalf("step %d: from the kept state\n%s\nfrom the stored bytes\n%s", i, fromKept, fromRaw)
		}
		if n := decodeNoTime(t, mustMarshal(t, next)); !reflect.DeepEqual(n, decodeNoTime(t, fromKept)) {
			t.Fatalf("step %d: the returned state is not what was encoded", i)
		}
		if kept != nil {
			if after, _ := json.Marshal(kept); string(after) != string(before) {
				t.Fatalf("step %d: the kept state changed:\nbefore %s\nafter  %s", i, before, after)
			}
		}
		raw, kept = fromKept, next
	}
}

func decodeNoTime(t *testing.T, b []byte) *schemas.ConversationState {
	t.Helper()
	st, err := decodeState("run", "r1", b)
	if err != nil {
		t.Fatal(err)
	}
	st.UpdatedAt, st.CreatedAt = time.Time{}, time.Time{}
	return st
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
