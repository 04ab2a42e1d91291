package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// Run statuses.
const (
	RunRunning   = "running"
	RunCompleted = "completed"
	RunFailed    = "failed"
)

// Step statuses. A step is pending until its wave starts, running from the
// moment it is dispatched until its result is applied, then completed,
// failed or skipped (a dependency did not complete).
const (
	StepPending   = "pending"
	StepRunning   = "running"
	StepCompleted = "completed"
	StepFailed    = "failed"
	StepSkipped   = "skipped"
)

// RunState is one pipeline run as StateStore.Run assembles it from its keys
// in the runs bucket (see runstore.go for the layout): the spec and the
// contracts it was validated against, the progress of every step, and the
// run's slots and history.
type RunState struct {
	ID        string                           `json:"id"`
	Name      string                           `json:"name,omitempty"`
	Status    string                           `json:"status"`
	Error     string                           `json:"error,omitempty"`
	Spec      schemas.PipelineSpec             `json:"spec"`
	Contracts map[string]schemas.AgentContract `json:"contracts,omitempty"`
	Waves     [][]string                       `json:"waves,omitempty"`
	Wave      int                              `json:"wave"` // index of the wave in progress
	Steps     map[string]*StepState            `json:"steps"`
	// State holds the run's slots (seed and routed outputs), its history and
	// the task ids already applied.
	State      *schemas.ConversationState `json:"state"`
	CreatedAt  time.Time                  `json:"created_at"`
	UpdatedAt  time.Time                  `json:"updated_at"`
	FinishedAt time.Time                  `json:"finished_at,omitzero"`
}

// StepState is the progress of one step of a run.
type StepState struct {
	ID           string                        `json:"id"`
	Agent        string                        `json:"agent"`
	Wave         int                           `json:"wave"`
	Status       string                        `json:"status"`
	Attempt      int                           `json:"attempt,omitempty"`
	TaskID       string                        `json:"taskid,omitempty"`
	Deadline     time.Time                     `json:"deadline,omitzero"`
	DispatchedAt time.Time                     `json:"dispatched_at,omitzero"`
	FinishedAt   time.Time                     `json:"finished_at,omitzero"`
	Summary      string                        `json:"summary,omitempty"`
	Error        string                        `json:"error,omitempty"`
	Reason       string                        `json:"reason,omitempty"` // why it was skipped
	Outputs      map[string]schemas.TypedValue `json:"outputs,omitempty"`
	Metrics      schemas.Metrics               `json:"metrics,omitzero"`
}

// Terminal reports whether the step is completed, failed or skipped.
func (s *StepState) Terminal() bool {
	return s.Status == StepCompleted || s.Status == StepFailed || s.Status == StepSkipped
}

// Done reports whether the run has ended.
func (r *RunState) Done() bool { return r.Status == RunCompleted || r.Status == RunFailed }

// Defaults of the state store.
const (
	DefaultMaxHistory      = 200
	DefaultMaxAppliedTasks = 1000
	DefaultMaxStateBytes   = 768 << 10 // well under the buckets' 1 MiB value limit
	maxUpdateAttempts      = 200
)

// StateStore loads and saves conversation and run state in KV with
// compare-and-set: an update reads the value and its revision, applies a
// mutation function and writes with that revision; on conflict it re-reads
// and re-applies the function, so no concurrent update is lost. Every write
// is compacted (oldest history first) to stay under a size bound.
//
// A StateStore is safe for concurrent use.
type StateStore struct {
	conversations jetstream.KeyValue
	runs          jetstream.KeyValue
	maxHistory    int
	maxApplied    int
	maxBytes      int
}

// StateOption configures a StateStore.
type StateOption func(*StateStore)

// WithMaxHistory bounds the history entries kept per conversation or run.
func WithMaxHistory(n int) StateOption { return func(s *StateStore) { s.maxHistory = n } }

// WithMaxAppliedTasks bounds the applied task ids kept for idempotency.
func WithMaxAppliedTasks(n int) StateOption { return func(s *StateStore) { s.maxApplied = n } }

// WithMaxStateBytes bounds the encoded size of one state value.
func WithMaxStateBytes(n int) StateOption { return func(s *StateStore) { s.maxBytes = n } }

// NewStateStore returns a store over the conversations and runs buckets
// (bus.Resources.Conversations and .Runs). Options: WithMaxHistory,
// WithMaxAppliedTasks, WithMaxStateBytes.
func NewStateStore(conversations, runs jetstream.KeyValue, opts ...StateOption) *StateStore {
	s := &StateStore{conversations: conversations, runs: runs,
		maxHistory: DefaultMaxHistory, maxApplied: DefaultMaxAppliedTasks, maxBytes: DefaultMaxStateBytes}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Conversation loads a conversation. A missing one wraps ErrNotFound.
func (s *StateStore) Conversation(ctx context.Context, id string) (*schemas.ConversationState, error) {
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
func (s *StateStore) UpdateConversation(ctx context.Context, id string, fn func(*schemas.ConversationState) error) (*schemas.ConversationState, error) {
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
		return s.encode(st, st)
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
		return nil, fmt.Errorf("%s %q: stored state does not decode: %w", kind, id, err)
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
		return 0, fmt.Errorf("%s %q: stored state does not decode: %w", kind, id, err)
	}
	return e.Revision(), nil
}

// update is the compare-and-set loop: read, mutate (apply returns the new
// encoding), write with the read revision, and on conflict start again.
func (s *StateStore) update(ctx context.Context, kv jetstream.KeyValue, kind, id string, create bool, apply func(raw []byte) ([]byte, error)) error {
	_, _, err := s.updateRev(ctx, kv, kind, id, create, apply)
	return err
}

// updateRev is update returning the value written and its revision (nil
// and 0 when apply changed nothing).
func (s *StateStore) updateRev(ctx context.Context, kv jetstream.KeyValue, kind, id string, create bool, apply func(raw []byte) ([]byte, error)) ([]byte, uint64, error) {
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		var (
			raw []byte
			rev uint64
		)
		e, err := kv.Get(ctx, id)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
			if !create {
				return nil, 0, fmt.Errorf("%w: no %s %q in bucket %s", ErrNotFound, kind, id, kv.Bucket())
			}
		case err != nil:
			return nil, 0, fmt.Errorf("reading %s %q: %w", kind, id, err)
		default:
			raw, rev = e.Value(), e.Revision()
		}
		b, err := apply(raw)
		if errors.Is(err, ErrUnchanged) {
			return nil, 0, nil
		}
		if err != nil {
			return nil, 0, err
		}
		var nrev uint64
		if rev == 0 {
			nrev, err = kv.Create(ctx, id, b)
		} else {
			nrev, err = kv.Update(ctx, id, b, rev)
		}
		if err == nil {
			return b, nrev, nil
		}
		if !isConflict(err) {
			return nil, 0, fmt.Errorf("writing %s %q: %w", kind, id, err)
		}
		if err := backoff(ctx, attempt); err != nil {
			return nil, 0, err
		}
	}
	return nil, 0, fmt.Errorf("%w: %s %q after %d attempts", ErrConflict, kind, id, maxUpdateAttempts)
}

// backoff waits a little after a lost compare-and-set race, more with each
// attempt, so the writers spread out before they re-apply.
func backoff(ctx context.Context, attempt int) error {
	d := time.Duration(rand.IntN(1+min(attempt, 20))) * time.Millisecond
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func isConflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// encode marshals v after compacting st (the slots and history inside v)
// until v fits the size bound.
func (s *StateStore) encode(v any, st *schemas.ConversationState) ([]byte, error) {
	compactState(st, s.maxHistory, s.maxApplied)
	for {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		if s.maxBytes <= 0 || len(b) <= s.maxBytes {
			return b, nil
		}
		if !shrinkHistory(st) {
			return nil, fmt.Errorf("%w: a value of %d bytes after compaction, over the bound of %d; spill large collections to the object store",
				ErrTooLarge, len(b), s.maxBytes)
		}
	}
}

// compactState keeps the newest maxHistory history entries and the newest
// maxApplied applied task ids.
func compactState(st *schemas.ConversationState, maxHistory, maxApplied int) {
	if st == nil {
		return
	}
	if maxHistory > 0 && len(st.History) > maxHistory {
		st.History = slices.Clone(st.History[len(st.History)-maxHistory:])
	}
	if maxApplied > 0 && len(st.AppliedTasks) > maxApplied {
		st.AppliedTasks = slices.Clone(st.AppliedTasks[len(st.AppliedTasks)-maxApplied:])
	}
}

// shrinkHistory frees space from the oldest history: first it drops the
// values kept in the oldest entry of the older half that still has some,
// then whole entries, oldest first.
// It reports false when there is nothing left to drop.
func shrinkHistory(st *schemas.ConversationState) bool {
	if st == nil || len(st.History) == 0 {
		return false
	}
	for i := range len(st.History) / 2 {
		if len(st.History[i].Outputs) > 0 {
			st.History[i].Outputs = nil
			if st.History[i].Text == "" {
				st.History[i].Text = "(values dropped by compaction)"
			}
			return true
		}
	}
	st.History = st.History[1:]
	return true
}
