package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// A conversation is kept in the conversations bucket as keys none of which
// grows with the conversation, so a turn costs the same at turn 200 as at
// turn 1:
//
//	<conversation>          its state: slots, the number of turns, the
//	                        question a turn asked, the task ids the turn in
//	                        progress applied (compare-and-set;
//	                        schemas.ConversationState, no history)
//	<conversation>.chat     the chat loop's memory of the turn in progress and
//	                        of the request ids of the last turns; its shape
//	                        belongs to the chat package, the key and its
//	                        revisions to this one
//	<conversation>.turn.<n> turn n once it ended: its messages (the mesh's
//	                        own message type), its history entries (the user's
//	                        message, each agent result with the outputs no
//	                        slot holds, the answer) and its response (written
//	                        once, with create)
//	<conversation>.req.<h>  the number of the turn that answered the request
//	                        whose id hashes to h (written once, after the turn)
//
// Each fact has one home: the turn count is the conversation's, a turn's
// message, answer and results are its turn key's. The history that
// Conversation returns is assembled from the turn keys on read.

func chatKey(conv string) string { return conv + ".chat" }

func turnKey(conv string, n int) string { return conv + ".turn." + strconv.Itoa(n) }

func requestKey(conv, requestID string) string {
	sum := sha256.Sum256([]byte(requestID))
	return conv + ".req." + hex.EncodeToString(sum[:16])
}

// PutTurnOf notes that turn n answered request requestID of conv.
func (s *Store) PutTurnOf(ctx context.Context, conv, requestID string, n int) error {
	if _, err := s.conversations.Create(ctx, requestKey(conv, requestID), []byte(strconv.Itoa(n))); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("noting the turn of request %s of conversation %q: %w", requestID, conv, err)
	}
	return nil
}

// TurnOf returns the turn that answered request requestID of conv;
// ErrNotFound when none did.
func (s *Store) TurnOf(ctx context.Context, conv, requestID string) (int, error) {
	e, err := s.conversations.Get(ctx, requestKey(conv, requestID))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return 0, fmt.Errorf("%w: no turn answered request %s of conversation %q", ErrNotFound, requestID, conv)
	}
	if err != nil {
		return 0, fmt.Errorf("reading the turn of request %s of conversation %q: %w", requestID, conv, err)
	}
	n, err := strconv.Atoi(string(e.Value()))
	if err != nil {
		return 0, fmt.Errorf("%w: the turn of request %s of conversation %q: %w", ErrCorrupt, requestID, conv, err)
	}
	return n, nil
}

// MaxAssembledTurns bounds the turns whose history Conversation assembles:
// the newest ones.
const MaxAssembledTurns = 100

// Conversation loads a conversation with its history assembled from its
// turns (the newest MaxAssembledTurns). A missing one wraps ErrNotFound.
func (s *Store) Conversation(ctx context.Context, id string) (*schemas.ConversationState, error) {
	st, err := s.ConversationState(ctx, id)
	if err != nil {
		return nil, err
	}
	for n := max(1, st.Turns-MaxAssembledTurns+1); n <= st.Turns; n++ {
		var t struct {
			History []schemas.HistoryEntry `json:"history"`
		}
		raw, err := s.Turn(ctx, id, n)
		if errors.Is(err, ErrNotFound) {
			continue // in progress, or never finished
		}
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("%w: turn %d of conversation %q: %w", ErrCorrupt, n, id, err)
		}
		st.History = append(st.History, t.History...)
	}
	return st, nil
}

// ConversationState loads a conversation's stored state alone: slots, turn
// count, no history (a conversation of the previous layout keeps the history
// it had). A missing one wraps ErrNotFound.
func (s *Store) ConversationState(ctx context.Context, id string) (*schemas.ConversationState, error) {
	var st schemas.ConversationState
	if _, err := load(ctx, s.conversations, "conversation", id, &st); err != nil {
		return nil, err
	}
	if st.Slots == nil {
		st.Slots = map[string]schemas.TypedValue{}
	}
	return &st, nil
}

// PutTurn stores turn n of conversation conv once it ended; a turn stored
// already (a redelivered request finishing it again) is left as it is.
func (s *Store) PutTurn(ctx context.Context, conv string, n int, raw []byte) error {
	if s.maxBytes > 0 && len(raw) > s.maxBytes {
		return fmt.Errorf("%w: turn %d of conversation %q would be %d bytes, over the bound of %d", ErrTooLarge, n, conv, len(raw), s.maxBytes)
	}
	if _, err := s.conversations.Create(ctx, turnKey(conv, n), raw); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("saving turn %d of conversation %q: %w", n, conv, err)
	}
	return nil
}

// Turn reads turn n of conversation conv; ErrNotFound while it runs.
func (s *Store) Turn(ctx context.Context, conv string, n int) ([]byte, error) {
	e, err := s.conversations.Get(ctx, turnKey(conv, n))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, fmt.Errorf("%w: no turn %d of conversation %q", ErrNotFound, n, conv)
	}
	if err != nil {
		return nil, fmt.Errorf("reading turn %d of conversation %q: %w", n, conv, err)
	}
	return e.Value(), nil
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
