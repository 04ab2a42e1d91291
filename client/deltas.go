package client

import (
	"encoding/json"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/schemas"
)

// TurnOption configures Turn.
type TurnOption func(*turnOptions)

type turnOptions struct {
	deltas func(schemas.ChatDelta)
	rewind *schemas.ChatRewind
}

// maxHeld bounds the pieces held back waiting for their step's note.
const maxHeld = 4096

// deltaOrder hands pieces to the caller in the order the turn wrote them
// relative to its progress notes. The notes come through JetStream and the
// pieces on core NATS, so a step's first pieces can arrive before the
// "thinking" note the orchestrator stored ahead of them (or before the
// previous tool's "returned" note stored ahead of that): a piece of a step
// whose note has not been seen is held until the note, or the answer,
// comes.
type deltaOrder struct {
	fn      func(schemas.ChatDelta)
	thought int // the last step whose "thinking" note was handed over
	held    []schemas.ChatDelta
}

// piece takes a piece off the wire; one that does not decode is dropped,
// as a lost piece would be.
func (o *deltaOrder) piece(m *nats.Msg) {
	var d schemas.ChatDelta
	if json.Unmarshal(m.Data, &d) != nil {
		return
	}
	if d.Step > o.thought && len(o.held) < maxHeld {
		o.held = append(o.held, d)
		return
	}
	o.fn(d)
}

// noted is called after a progress note was handed over: a "thinking"
// note releases the pieces of its step (all held pieces when it names no
// step, as an orchestrator from before steps were noted sends it).
func (o *deltaOrder) noted(p schemas.TaskProgress) {
	if p.TaskID != "" || p.Message != "thinking" {
		return
	}
	if p.Step == 0 {
		o.thought = int(^uint(0) >> 1)
	} else {
		o.thought = max(o.thought, p.Step)
	}
	kept := o.held[:0]
	for _, d := range o.held {
		if d.Step > o.thought {
			kept = append(kept, d)
			continue
		}
		o.fn(d)
	}
	o.held = kept
}

// flush hands over every held piece (the answer came).
func (o *deltaOrder) flush() {
	for _, d := range o.held {
		o.fn(d)
	}
	o.held = nil
}

// WithDeltas has Turn call fn with each piece of text the turn's model
// writes, as it writes it (as FollowDeltas reads them), from the goroutine
// that calls Turn's progress callback, every piece written before the
// answer before Turn returns. A step's pieces come after the progress
// notes published before that model call (its "thinking" note included). A reader too slow to keep up loses pieces,
// not the answer.
func WithDeltas(fn func(schemas.ChatDelta)) TurnOption {
	return func(o *turnOptions) { o.deltas = fn }
}
