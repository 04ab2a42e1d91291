package meshcore

import (
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// FollowDeltas calls fn with each piece of text the chat loop's model
// writes for conversation conv (schemas.ChatDelta on names.DeltasOf(conv):
// owned or not, or a client's own; core NATS) until stop is called. Pieces are sent at most once and never
// stored: a subscriber sees those written after it subscribed, and a gap in
// Seq is a lost piece. fn runs on the subscription's goroutine, one call at
// a time.
func FollowDeltas(nc *nats.Conn, names bus.Names, conv string, fn func(schemas.ChatDelta)) (stop func(), err error) {
	if err := bus.ValidateToken("conversation id", conv); err != nil {
		return nil, err
	}
	var subs []*nats.Subscription
	stop = func() {
		for _, sub := range subs {
			_ = sub.Unsubscribe()
		}
	}
	// One subscription at a time calls fn: the pieces of one id come on
	// one of the subjects, so one subscription's goroutine orders them.
	for _, subject := range names.DeltasOf(conv) {
		sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
			var d schemas.ChatDelta
			if json.Unmarshal(m.Data, &d) == nil {
				fn(d)
			}
		})
		if err != nil {
			stop()
			return nil, fmt.Errorf("following the text of conversation %s: %w", conv, err)
		}
		subs = append(subs, sub)
	}
	return stop, nil
}
