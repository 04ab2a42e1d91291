package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// chatRecord is the chat loop's memory of one conversation, stored as JSON
// under <conversation>.chat in the conversations bucket: the turn in
// progress and what it needs to resume, nothing that grows with the
// conversation. Each finished turn is a key of its own (storedTurn).
type chatRecord struct {
	Current *chatTurn  `json:"current,omitempty"`
	Asked   *askedTurn `json:"asked,omitempty"` // a turn that ended input_required, until the next message continues it

	// LegacyTurns are the finished turns a record of the previous layout
	// kept; load moves them to turn key 0. LegacyDone are its last
	// answers, read to answer a redelivered request again.
	LegacyTurns []messages `json:"turns,omitempty"`
	LegacyDone  []doneTurn `json:"done,omitempty"`
	// Owner is the client whose request started the conversation (the
	// client its subject named, bus.Requester); "" when it came on the
	// plain subject. Only the owner's requests, and plain ones, add turns.
	Owner string `json:"owner,omitempty"`
	// Nonce tags the conversation's tool call task ids (schemas.TaskTag),
	// so no one can send a task under one before the turn does; "" in
	// conversations started before nonces (their ids stay untagged).
	Nonce string `json:"nonce,omitempty"`
}

// chatTurn is the turn in progress.
type chatTurn struct {
	RequestID string                   `json:"request_id"`
	Message   string                   `json:"message"`
	Number    int                      `json:"number"`
	Messages  messages                 `json:"messages"`
	Steps     int                      `json:"steps"`
	ToolCalls []schemas.ToolCallRecord `json:"tool_calls,omitempty"`
	// Results are the history entries of the turn's agent results: each
	// result's summary and the outputs no slot holds.
	Results []schemas.HistoryEntry `json:"results,omitempty"`
	// Usage totals the turn so far: the model calls' and every agent
	// call's tokens, cost, model time and tool time.
	schemas.Usage
	Plan      []PlanStep `json:"plan,omitempty"`      // offline planner only
	Empty     []string   `json:"empty,omitempty"`     // task ids of calls whose every output held nothing
	Continues string     `json:"continues,omitempty"` // the request whose turn asked the question this one answers
	Approved  []string   `json:"approved,omitempty"`  // agent calls (heldKey) the user approved when a policy held them
	StartedAt time.Time  `json:"started_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// doneTurn is an answer a record of the previous layout kept.
type doneTurn struct {
	RequestID string               `json:"request_id"`
	Response  schemas.ChatResponse `json:"response"`
}

// storedTurn is a finished turn, stored once under
// <conversation>.turn.<n>.
type storedTurn struct {
	Number    int    `json:"number"`
	RequestID string `json:"request_id"`
	// Messages are what the model said and was told in the turn, for the
	// next turns' prompts; none for a turn that asked the user a question
	// (the turn that answers it carries them on).
	Messages messages `json:"messages,omitempty"`
	// History is the turn as the conversation's history shows it: the
	// user's message, each agent result, the answer.
	History  []schemas.HistoryEntry `json:"history"`
	Response schemas.ChatResponse   `json:"response"`
}

// session is one turn being run, with the record's KV revision.
type session struct {
	conv string
	rec  chatRecord
	rev  uint64
	turn *chatTurn
	// history is what the prompt shows of the earlier turns, read once
	// per run of the turn (nil until then).
	history []llm.Message
	// recalled is the system message of the facts memory recalls for
	// the turn's message (memory.go), read once per run (nil until then).
	recalled []llm.Message
	mu       sync.Mutex // guards turn.Results and held while calls run in parallel
	held     string     // the agent call (heldKey) a policy holds for approval, asked about when the calls end
}

// ErrNotOwner is a client's request for a conversation another client
// (or no client) started; it is refused with code forbidden.
var ErrNotOwner = errors.New("not the owner")

// errTakenOver means another replica advanced the same turn further.
var errTakenOver = errors.New("chat turn taken over by another replica")

// begin loads or creates the chat record and the turn for requestID.
//
// One turn at a time per conversation: the turn claims the conversation by
// a compare-and-set of the chat record, so of several requests waiting on
// one conversation (on any replicas) exactly one goes on; a turn of another
// request that is still moving is waited for, and one that stopped moving
// long ago was lost and is closed.
func (c *Chat) begin(ctx context.Context, conv, requestID, message string) (*session, error) {
	s := &session{conv: conv}
	requester := bus.Requester(ctx)
	for {
		if err := c.load(ctx, s); err != nil {
			return nil, err
		}
		if s.rev == 0 {
			s.rec.Owner = requester // a new conversation is its sender's
			s.rec.Nonce = schemas.NewRunNonce()
		} else if requester != "" && requester != s.rec.Owner {
			return nil, schemas.WithCode(schemas.CodeForbidden, fmt.Errorf("%w: conversation %s was not started by client %s: only the client that started a conversation (or admin) may add turns to it; start a new conversation",
				ErrNotOwner, conv, requester))
		}
		if done, err := c.done(ctx, s, requestID); done || err != nil {
			return s, err
		}
		cur := s.rec.Current
		if cur != nil && cur.RequestID == requestID {
			s.turn = cur
			return s, c.count(ctx, s)
		}
		if cur != nil && time.Since(cur.UpdatedAt) <= staleTurn {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		if cur != nil && cur.Number > 0 { // a turn that never finished: remember what was asked
			if err := c.storeTurn(ctx, s.conv, storedTurn{Number: cur.Number, RequestID: cur.RequestID,
				Messages: messages{
					{Role: llm.RoleUser, Content: cur.Message},
					{Role: llm.RoleAssistant, Content: interrupted},
				},
				History: []schemas.HistoryEntry{{At: cur.StartedAt, Kind: "user", Text: cur.Message}, {At: cur.UpdatedAt, Kind: "assistant", Text: interrupted}},
				Response: schemas.ChatResponse{ConversationID: s.conv, Output: interrupted, State: schemas.ChatFailed, Planner: c.Planner(),
					Error: interrupted, Code: schemas.CodeAgentError}}); err != nil {
				return nil, err
			}
		}
		s.turn = &chatTurn{RequestID: requestID, Message: message, StartedAt: time.Now().UTC(),
			Messages: []llm.Message{{Role: llm.RoleUser, Content: message}}}
		if a := s.rec.Asked; a != nil && c.llm != nil { // this message answers the question the last turn asked
			s.turn.Messages, s.turn.Continues = continueAsked(a, message), a.RequestID
			s.turn.Approved = approvedBy(a, message)
		}
		s.rec.Asked = nil
		s.rec.Current = s.turn
		err := c.put(ctx, s)
		if state.IsConflict(err) {
			continue // another request claimed the conversation first
		}
		if err != nil {
			return nil, err
		}
		return s, c.count(ctx, s)
	}
}

// count makes the claimed turn the conversation's next one, once: the
// turn's number is saved in the chat record before the conversation counts
// it, so a turn resumed after a crash in between counts it once.
func (c *Chat) count(ctx context.Context, s *session) error {
	t := s.turn
	if t.Number == 0 {
		st, err := c.store.ConversationState(ctx, s.conv)
		switch {
		case errors.Is(err, state.ErrNotFound):
			t.Number = 1
		case err != nil:
			return err
		default:
			t.Number = st.Turns + 1
		}
		if err := c.save(ctx, s); err != nil {
			return err
		}
	}
	_, err := c.store.UpdateConversation(ctx, s.conv, func(st *schemas.ConversationState) error {
		if st.Turns >= t.Number {
			return state.ErrUnchanged
		}
		st.Turns = t.Number
		st.InputRequired = "" // this message answers it
		st.AppliedTasks = nil // the ids of this turn's calls only: no later turn runs an earlier one's
		return nil
	})
	return err
}

// done reports whether a turn answered requestID already.
func (c *Chat) done(ctx context.Context, s *session, requestID string) (bool, error) {
	for _, d := range s.rec.LegacyDone {
		if d.RequestID == requestID {
			return true, nil
		}
	}
	_, err := c.store.TurnOf(ctx, s.conv, requestID)
	if errors.Is(err, state.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// answered returns the response of the finished turn that answered
// requestID.
func (c *Chat) answered(ctx context.Context, s *session, requestID string) (schemas.ChatResponse, error) {
	for _, d := range s.rec.LegacyDone {
		if d.RequestID == requestID {
			return d.Response, nil
		}
	}
	n, err := c.store.TurnOf(ctx, s.conv, requestID)
	if err != nil {
		return schemas.ChatResponse{}, err
	}
	raw, err := c.store.Turn(ctx, s.conv, n)
	if err != nil {
		return schemas.ChatResponse{}, err
	}
	var t storedTurn
	if err := json.Unmarshal(raw, &t); err != nil {
		return schemas.ChatResponse{}, fmt.Errorf("%w: turn %d of conversation %q: %w", state.ErrCorrupt, n, s.conv, err)
	}
	return t.Response, nil
}

// interrupted is the answer of a turn that stopped before it finished.
const interrupted = "(this turn was interrupted before it finished)"

// storeTurn writes a finished turn's key.
func (c *Chat) storeTurn(ctx context.Context, conv string, t storedTurn) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return c.store.PutTurn(ctx, conv, t.Number, b)
}

// migrate moves the finished turns a record of the previous layout kept
// into turn key 0, read as the oldest history of the next prompts.
func (c *Chat) migrate(ctx context.Context, s *session) error {
	if len(s.rec.LegacyTurns) == 0 {
		return nil
	}
	var all messages
	for _, t := range s.rec.LegacyTurns {
		all = append(all, t...)
	}
	if err := c.storeTurn(ctx, s.conv, storedTurn{Number: 0, Messages: all, History: []schemas.HistoryEntry{}}); err != nil {
		return err
	}
	s.rec.LegacyTurns = nil
	return nil
}

func (c *Chat) load(ctx context.Context, s *session) error {
	raw, rev, err := c.store.ChatRecord(ctx, s.conv)
	if err != nil {
		return err
	}
	var rec chatRecord
	if raw != nil {
		if err := json.Unmarshal(raw, &rec); err != nil {
			return fmt.Errorf("%w: the chat of conversation %q (key %s.chat) does not decode: %w; delete that key or start a new conversation",
				state.ErrCorrupt, s.conv, s.conv, err)
		}
	}
	s.rec, s.rev = rec, rev
	return c.migrate(ctx, s)
}

// save writes the record with compare-and-set. Losing the race to a
// replica that has the same turn further along ends this run of the turn.
func (c *Chat) save(ctx context.Context, s *session) error {
	err := c.put(ctx, s)
	if err == nil || !state.IsConflict(err) {
		return err
	}
	mine := *s.turn
	other := &session{conv: s.conv}
	if err := c.load(ctx, other); err != nil {
		return err
	}
	if cur := other.rec.Current; cur == nil || cur.RequestID != mine.RequestID || len(cur.Messages) >= len(mine.Messages) {
		return errTakenOver
	}
	other.rec.Current = &mine
	s.rec, s.rev, s.turn = other.rec, other.rev, other.rec.Current
	return c.save(ctx, s)
}

// put writes the chat record with compare-and-set on the revision s read
// or last wrote; a conflict is returned as is (state.IsConflict).
func (c *Chat) put(ctx context.Context, s *session) error {
	if s.rec.Current != nil {
		s.rec.Current.UpdatedAt = time.Now().UTC()
	}
	b, err := json.Marshal(s.rec)
	// Over the size bound, the previous layout's oldest answers go first.
	for limit := c.store.MaxStateBytes(); err == nil && limit > 0 && len(b) > limit && len(s.rec.LegacyDone) > 0; {
		s.rec.LegacyDone = s.rec.LegacyDone[1:]
		b, err = json.Marshal(s.rec)
	}
	if err != nil {
		return err
	}
	rev, err := c.store.PutChatRecord(ctx, s.conv, b, s.rev)
	if err != nil {
		return err
	}
	s.rev = rev
	return nil
}
