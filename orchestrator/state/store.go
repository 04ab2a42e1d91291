package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/schemas"
)

// Defaults of the state store.
const (
	DefaultMaxHistory      = 200
	DefaultMaxAppliedTasks = 1000
	DefaultMaxStateBytes   = 768 << 10 // well under the buckets' 1 MiB value limit
	maxUpdateAttempts      = 200
)

// Store loads and saves conversation and run state in KV with
// compare-and-set: an update reads the value and its revision, applies a
// mutation function and writes with that revision; on conflict it re-reads
// and re-applies the function, so no concurrent update is lost. Every write
// is compacted (oldest history first) to stay under a size bound.
//
// A Store is safe for concurrent use.
type Store struct {
	conversations jetstream.KeyValue
	runs          jetstream.KeyValue
	maxHistory    int
	maxApplied    int
	maxBytes      int
	async         jetstream.JetStream // pipelined writes (see WithPipelining)
	leaderJS      jetstream.JetStream // reads from the leader (see WithLeaderReads)
	// runsAny reads the runs bucket by direct get, any replica answering:
	// for keys written once (see getOnceJSON). runs without WithLeaderReads.
	runsAny jetstream.KeyValue
}

// Option configures a Store.
type Option func(*Store)

// WithMaxHistory bounds the history entries kept per conversation or run.
func WithMaxHistory(n int) Option { return func(s *Store) { s.maxHistory = n } }

// WithMaxAppliedTasks bounds the applied task ids kept for idempotency.
func WithMaxAppliedTasks(n int) Option { return func(s *Store) { s.maxApplied = n } }

// WithMaxStateBytes bounds the encoded size of one state value.
func WithMaxStateBytes(n int) Option { return func(s *Store) { s.maxBytes = n } }

// New returns a store over the conversations and runs buckets
// (bus.Resources.Conversations and .Runs). Reads and writes that fail
// transiently are tried again for bus.TransientWait (see bus.Transient). Options:
// WithMaxHistory, WithMaxAppliedTasks, WithMaxStateBytes, WithPipelining,
// WithLeaderReads.
func New(conversations, runs jetstream.KeyValue, opts ...Option) *Store {
	s := &Store{maxHistory: DefaultMaxHistory, maxApplied: DefaultMaxAppliedTasks, maxBytes: DefaultMaxStateBytes}
	for _, o := range opts {
		o(s)
	}
	s.conversations, s.runs = retrying(leader(s.leaderJS, conversations)), retrying(leader(s.leaderJS, runs))
	s.runsAny = s.runs
	if s.leaderJS != nil {
		s.runsAny = retrying(runs)
	}
	return s
}

// update is the compare-and-set loop: read, mutate (apply returns the new
// encoding), write with the read revision, and on conflict start again.
func (s *Store) update(ctx context.Context, kv jetstream.KeyValue, kind, id string, create bool, apply func(raw []byte) ([]byte, error)) error {
	_, _, err := s.updateRev(ctx, kv, kind, id, create, apply)
	return err
}

// updateRev is update returning the value written and its revision (nil
// and 0 when apply changed nothing).
func (s *Store) updateRev(ctx context.Context, kv jetstream.KeyValue, kind, id string, create bool, apply func(raw []byte) ([]byte, error)) ([]byte, uint64, error) {
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
		if !IsConflict(err) {
			return nil, 0, fmt.Errorf("writing %s %q: %w", kind, id, err)
		}
		if err := Backoff(ctx, attempt); err != nil {
			return nil, 0, err
		}
	}
	return nil, 0, fmt.Errorf("%w: %s %q after %d attempts", ErrConflict, kind, id, maxUpdateAttempts)
}

// Backoff waits a little after a lost compare-and-set race, more with each
// attempt, so the writers spread out before they re-apply.
func Backoff(ctx context.Context, attempt int) error {
	d := time.Duration(rand.IntN(1+min(attempt, 20))) * time.Millisecond
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// IsConflict reports a compare-and-set that lost to another writer.
func IsConflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// Encode marshals v after compacting st (the slots and history inside v)
// until v fits the size bound.
func (s *Store) Encode(v any, st *schemas.ConversationState) ([]byte, error) {
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
