package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// ErrBadRewind reports a rewind to a turn the conversation does not have.
var ErrBadRewind = errors.New("state: no such turn to rewind to")

// RewindConversation starts conversation to as conversation from was
// before its turn turn (from 1): the keys of from's turns before it are
// copied, and to's state holds turn-1 turns, its origin, and the slots
// from had then: those of the newest revision of from's state with fewer
// turns that the bucket's history still holds (it keeps the last few
// writes of each key), else none. from is only read.
//
// A to that exists with this origin is returned as it is (a redelivered
// request); with another, or none, it wraps ErrExists. A from that does
// not exist wraps ErrNotFound; a turn it does not have, ErrBadRewind.
func (s *Store) RewindConversation(ctx context.Context, from, to string, turn int) (*schemas.ConversationState, error) {
	for _, id := range []string{from, to} {
		if err := bus.ValidateToken("conversation id", id); err != nil {
			return nil, err
		}
	}
	origin := &schemas.ChatRewind{ConversationID: from, Turn: turn}
	if have, err := s.ConversationState(ctx, to); err == nil {
		return sameOrigin(have, origin)
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	cur, err := s.ConversationState(ctx, from)
	if err != nil {
		return nil, err
	}
	if from == to || turn < 1 || turn > cur.Turns {
		return nil, fmt.Errorf("%w: conversation %q has turns 1 to %d: rewind to one of them, into a new conversation", ErrBadRewind, from, cur.Turns)
	}
	st := schemas.NewConversationState(to)
	st.Turns, st.Origin = turn-1, origin
	if turn > 1 {
		if slots, err := s.slotsBefore(ctx, from, turn); err != nil {
			return nil, err
		} else if slots != nil {
			st.Slots = slots
		}
	}
	for n := 0; n < turn; n++ { // turn 0: the turns a conversation of the previous layout kept
		raw, err := s.Turn(ctx, from, n)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := s.PutTurn(ctx, to, n, raw); err != nil {
			return nil, err
		}
	}
	b, err := s.Encode(st, st)
	if err != nil {
		return nil, err
	}
	if _, err := s.conversations.Create(ctx, to, b); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			if have, err := s.ConversationState(ctx, to); err == nil {
				return sameOrigin(have, origin)
			}
		}
		return nil, fmt.Errorf("creating conversation %q: %w", to, err)
	}
	return st, nil
}

// sameOrigin returns have when it is the rewind origin names, else an
// error wrapping ErrExists.
func sameOrigin(have *schemas.ConversationState, origin *schemas.ChatRewind) (*schemas.ConversationState, error) {
	if have.Origin != nil && *have.Origin == *origin {
		return have, nil
	}
	return nil, fmt.Errorf("%w: conversation %q: a rewind starts a new conversation; name one that does not exist (or none)", ErrExists, have.ID)
}

// slotsBefore returns the slots of the newest revision of conversation
// conv's state with fewer than turn turns that the bucket's history holds;
// nil when it holds none.
func (s *Store) slotsBefore(ctx context.Context, conv string, turn int) (map[string]schemas.TypedValue, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	entries, err := s.conversations.History(ctx, conv)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the history of conversation %q: %w", conv, err)
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Operation() != jetstream.KeyValuePut {
			continue
		}
		var st schemas.ConversationState
		if json.Unmarshal(entries[i].Value(), &st) == nil && st.Turns < turn {
			if st.Slots == nil {
				st.Slots = map[string]schemas.TypedValue{}
			}
			return st.Slots, nil
		}
	}
	return nil, nil
}
