package badinput

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// Garbage under a conversation's key fails each turn at once with
// corrupt_state and does not hold the next turn; once the key is deleted,
// as the answer says, the conversation goes on.
func TestCorruptConversationDoesNotHangLaterTurns(t *testing.T) {
	s := newShared(t)
	conv := s.id("corrupt")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.m.Res.Conversations.Put(ctx, conv, []byte("\xff garbage")); err != nil {
		t.Fatal(err)
	}
	cons, err := s.js.OrderedConsumer(ctx, s.names.EventsStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{s.names.Events(conv, "chat")}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	turn := func() schemas.ChatResponse {
		t.Helper()
		start := time.Now()
		s.publish(t, event(t, s.names.ChatRequest(), bus.TypeChatRequested, s.id("req"), schemas.ChatRequest{ConversationID: conv, Message: "hello"}, nil))
		wait, stop := context.WithTimeout(ctx, 3*time.Second)
		defer stop()
		for {
			m, err := it.Next(jetstream.NextContext(wait))
			if errors.Is(err, jetstream.ErrOrderedConsumerReset) {
				continue
			}
			if err != nil {
				t.Fatalf("no answer within 3 s: %v", err)
			}
			ev, err := bus.DecodeJS(m)
			if err != nil || ev.Type != bus.TypeChatResponded {
				continue
			}
			var r schemas.ChatResponse
			if err := ev.DataAs(&r); err != nil {
				t.Fatal(err)
			}
			t.Logf("answered in %s: %s %s", time.Since(start), r.State, r.Code)
			return r
		}
	}
	for i := range 2 {
		if r := turn(); r.State != schemas.ChatFailed || r.Code != schemas.CodeCorruptState {
			t.Fatalf("turn %d: %s %q: %s", i+1, r.State, r.Code, r.Error)
		}
	}
	if err := s.m.Res.Conversations.Delete(ctx, conv); err != nil {
		t.Fatal(err)
	}
	if r := turn(); r.State != schemas.ChatCompleted {
		t.Fatalf("after the key was deleted the turn ended %s %q: %s", r.State, r.Code, r.Error)
	}
}
