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

// delta hands a piece to the caller's callback; one that does not decode
// is dropped, as a lost piece would be.
func (o turnOptions) delta(m *nats.Msg) {
	var d schemas.ChatDelta
	if json.Unmarshal(m.Data, &d) == nil {
		o.deltas(d)
	}
}

// WithDeltas has Turn call fn with each piece of text the turn's model
// writes, as it writes it (as FollowDeltas reads them), from the goroutine
// that calls Turn's progress callback, every piece written before the
// answer before Turn returns. A reader too slow to keep up loses pieces,
// not the answer.
func WithDeltas(fn func(schemas.ChatDelta)) TurnOption {
	return func(o *turnOptions) { o.deltas = fn }
}
