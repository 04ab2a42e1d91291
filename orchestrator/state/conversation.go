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

// A conversation is kept in the conversations bucket as two keys:
//
//	<conversation>       its state: slots, history, applied task ids and the
//	                     number of turns (compare-and-set; schemas.ConversationState)
//	<conversation>.chat  the chat loop's resumable memory of its turns (the
//	                     model messages, the turn in progress, the last
//	                     answers); its shape belongs to the chat package, the
//	                     key and its revisions to this one
//
// The turn count in the state is a cache of the chat record's with one
// writer: the turn that claims its number (see chat) writes it once.

func chatKey(conv string) string { return conv + ".chat" }

// Conversation loads a conversation. A missing one wraps ErrNotFound.
func (s *Store) Conversation(ctx context.Context, id string) (*schemas.ConversationState, error) {
	var st schemas.ConversationState
	if _, err := load(ctx, s.conversations, "conversation", id, &st); err != nil {
		return nil, err
	}
	if st.Slots == nil {
		st.Slots = map[string]schemas.TypedValue{}
	}
	return &st, nil
}

// UpdateConversation applies fn to the conversation's state with
// compare-and-set, creating the conversation when it does not exist yet.
// fn may run more than once (once per conflict) and must only mutate the
// state it is given; returning ErrUnchanged skips the write.
func (s *Store) UpdateConversation(ctx context.Context, id string, fn func(*schemas.ConversationState) error) (*schemas.ConversationState, error) {
	if err := bus.ValidateToken("conversation id", id); err != nil {
		return nil, err
	}
	var out *schemas.ConversationState
	err := s.update(ctx, s.conversations, "conversation", id, true, func(raw []byte) ([]byte, error) {
		st, err := decodeState("conversation", id, raw)
		if err != nil {
			return nil, err
		}
		out = st
		if err := fn(st); err != nil {
			return nil, err
		}
		st.UpdatedAt = time.Now().UTC()
		return s.Encode(st, st)
	})
	return out, err
}

// decodeState decodes the stored state of a conversation or run (kind)
// named id; nil raw is a new, empty state.
func decodeState(kind, id string, raw []byte) (*schemas.ConversationState, error) {
	if raw == nil {
		return schemas.NewConversationState(id), nil
	}
	st := &schemas.ConversationState{}
	if err := json.Unmarshal(raw, st); err != nil {
		return nil, fmt.Errorf("%w: %s %q: %w; delete the key (nats kv del) or start a new %s", ErrCorrupt, kind, id, err, kind)
	}
	if st.Slots == nil {
		st.Slots = map[string]schemas.TypedValue{}
	}
	return st, nil
}

func load(ctx context.Context, kv jetstream.KeyValue, kind, id string, dst any) (uint64, error) {
	if err := bus.ValidateToken(kind+" id", id); err != nil {
		return 0, err
	}
	e, err := kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return 0, fmt.Errorf("%w: no %s %q in bucket %s", ErrNotFound, kind, id, kv.Bucket())
	}
	if err != nil {
		return 0, fmt.Errorf("reading %s %q: %w", kind, id, err)
	}
	if err := json.Unmarshal(e.Value(), dst); err != nil {
		return 0, fmt.Errorf("%w: %s %q in bucket %s: %w; delete the key (nats kv del %s %s) or start a new %s", ErrCorrupt, kind, id, kv.Bucket(), err, kv.Bucket(), id, kind)
	}
	return e.Revision(), nil
}

// ChatRecord reads the chat memory of conversation conv and its revision;
// a conversation without one returns nil and revision 0.
func (s *Store) ChatRecord(ctx context.Context, conv string) ([]byte, uint64, error) {
	if err := bus.ValidateToken("conversation id", conv); err != nil {
		return nil, 0, err
	}
	e, err := s.conversations.Get(ctx, chatKey(conv))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		return nil, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("reading chat of conversation %q: %w", conv, err)
	}
	return e.Value(), e.Revision(), nil
}

// MaxStateBytes is the bound on one encoded value (WithMaxStateBytes); 0
// means none.
func (s *Store) MaxStateBytes() int { return s.maxBytes }

// PutChatRecord writes the chat memory of conv with compare-and-set on rev
// (0: it must not exist yet) and returns the new revision. A lost race is
// returned as is (IsConflict reports it); a record over MaxStateBytes wraps
// ErrTooLarge and is not written.
func (s *Store) PutChatRecord(ctx context.Context, conv string, raw []byte, rev uint64) (uint64, error) {
	if s.maxBytes > 0 && len(raw) > s.maxBytes {
		return 0, fmt.Errorf("%w: the chat of conversation %q would be %d bytes, over the bound of %d", ErrTooLarge, conv, len(raw), s.maxBytes)
	}
	var (
		nrev uint64
		err  error
	)
	if rev == 0 {
		nrev, err = s.conversations.Create(ctx, chatKey(conv), raw)
	} else {
		nrev, err = s.conversations.Update(ctx, chatKey(conv), raw, rev)
	}
	if err != nil && !IsConflict(err) {
		return 0, fmt.Errorf("saving chat of conversation %q: %w", conv, err)
	}
	return nrev, err
}
