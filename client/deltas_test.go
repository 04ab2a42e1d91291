package client

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/schemas"
)

// A step's pieces that come before its "thinking" note (they travel on
// core NATS, the note through JetStream) are handed over after the note,
// in the order they were written, and the answer releases what is left.
func TestDeltaOrderHoldsPiecesUntilTheirStepsNote(t *testing.T) {
	var got []string
	o := deltaOrder{fn: func(d schemas.ChatDelta) { got = append(got, d.Text) }}
	note := func(p schemas.TaskProgress) { got = append(got, "["+p.Message+"]"); o.noted(p) }
	piece := func(step, seq int, text string) {
		b, err := json.Marshal(schemas.ChatDelta{ConversationID: "c", Turn: 1, Step: step, Seq: seq, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		o.piece(&nats.Msg{Data: b})
	}
	note(schemas.TaskProgress{Message: "thinking", Step: 1})
	piece(1, 1, "a")
	piece(2, 1, "b") // step 2's first piece, before step 1's tool has returned
	note(schemas.TaskProgress{TaskID: "t1", Agent: "X", Message: "X returned"})
	piece(2, 2, "c")
	o.piece(&nats.Msg{Data: []byte("{not json")}) // dropped, as a lost piece
	note(schemas.TaskProgress{Message: "thinking", Step: 2})
	piece(2, 3, "d")
	piece(3, 1, "e") // its note never comes
	o.flush()
	want := "[thinking] a [X returned] [thinking] b c d e"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("handed over %q, want %q", s, want)
	}
}

// An orchestrator that notes "thinking" without a step (from before steps
// were noted) gets its pieces shown as they come once it has thought.
func TestDeltaOrderWithoutStepsReleasesEverything(t *testing.T) {
	var got []string
	o := deltaOrder{fn: func(d schemas.ChatDelta) { got = append(got, d.Text) }}
	b, _ := json.Marshal(schemas.ChatDelta{Step: 1, Seq: 1, Text: "a"})
	o.piece(&nats.Msg{Data: b})
	if len(got) != 0 {
		t.Fatalf("a piece before any note was handed over: %q", got)
	}
	o.noted(schemas.TaskProgress{Message: "thinking"})
	b, _ = json.Marshal(schemas.ChatDelta{Step: 7, Seq: 1, Text: "b"})
	o.piece(&nats.Msg{Data: b})
	if s := strings.Join(got, ""); s != "ab" {
		t.Fatalf("handed over %q, want \"ab\"", s)
	}
}
