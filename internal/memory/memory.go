// Package memory keeps the facts a mesh remembers across conversations:
// one key per fact in the memory bucket (bus.Names.MemoryBucket), under
// the identity the fact belongs to, <identity>.<fact id>. The chat loop
// writes facts (the model's remember tool, the slots an operator names)
// and recalls the ones that match a turn's message, ranked by the same
// BM25 as the knowledge agent's (internal/rank); `agentmesh memory ls|rm`
// and the dashboard list and remove them.
package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/rank"
)

// Limits of the memory.
const (
	MaxFactRunes = 500 // a fact's text, in characters
	MaxFacts     = 200 // facts one identity may keep; recall reads them all
)

// Sentinels; detail is added with fmt.Errorf("%w: ...").
var (
	ErrInvalidFact = errors.New("invalid fact")
	ErrFull        = errors.New("memory full")
	ErrNotFound    = errors.New("no such fact")
)

// Fact is one remembered fact, stored as JSON under <identity>.<id>.
type Fact struct {
	ID       string `json:"id"`
	Identity string `json:"identity"`
	Text     string `json:"text"`
	// Source says what wrote it: "remember" (the model's tool) or
	// "slot:<name>" (a slot the operator named).
	Source         string    `json:"source"`
	ConversationID string    `json:"conversation_id,omitempty"`
	At             time.Time `json:"at"`
}

// Store reads and writes the memory bucket. The bucket is looked up (and
// made, on a mesh provisioned before it) on first use. A Store is safe for
// concurrent use.
type Store struct {
	js    jetstream.JetStream
	names bus.Names

	mu sync.Mutex
	kv jetstream.KeyValue
}

// New returns the memory of the mesh js and names reach.
func New(js jetstream.JetStream, names bus.Names) *Store {
	return &Store{js: js, names: names}
}

func (s *Store) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv != nil {
		return s.kv, nil
	}
	kv, err := bus.EnsureMemory(ctx, s.js, s.names)
	if err != nil {
		return nil, err
	}
	s.kv = kv
	return kv, nil
}

// FactID is the id of a fact: a hash of its text (or, for a slot, of its
// source), so the same fact remembered twice is one key, and a slot's
// newer value replaces its older one.
func FactID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// Remember stores f under f.Identity, with f.ID (FactID of the text when
// empty) and f.At (now when zero). A text that is empty, not UTF-8 or
// longer than MaxFactRunes is refused with ErrInvalidFact; an identity
// that already keeps MaxFacts other facts with ErrFull.
func (s *Store) Remember(ctx context.Context, f Fact) (Fact, error) {
	f.Text = strings.TrimSpace(f.Text)
	if err := bus.ValidateToken("identity", f.Identity); err != nil {
		return f, fmt.Errorf("%w: %w", ErrInvalidFact, err)
	}
	switch n := utf8.RuneCountInString(f.Text); {
	case !utf8.ValidString(f.Text):
		return f, fmt.Errorf("%w: the text is not valid UTF-8", ErrInvalidFact)
	case n == 0:
		return f, fmt.Errorf("%w: the text is empty: give the fact as one short sentence", ErrInvalidFact)
	case n > MaxFactRunes:
		return f, fmt.Errorf("%w: the text is %d characters long: keep a fact under %d, one short sentence", ErrInvalidFact, n, MaxFactRunes)
	}
	if f.ID == "" {
		f.ID = FactID(strings.ToLower(f.Text))
	}
	if f.At.IsZero() {
		f.At = time.Now().UTC()
	}
	kv, err := s.bucket(ctx)
	if err != nil {
		return f, err
	}
	have, err := s.List(ctx, f.Identity)
	if err != nil {
		return f, err
	}
	if len(have) >= MaxFacts && !slices.ContainsFunc(have, func(h Fact) bool { return h.ID == f.ID }) {
		return f, fmt.Errorf("%w: identity %s keeps %d facts, the most it may: remove some with `agentmesh memory rm`", ErrFull, f.Identity, len(have))
	}
	b, err := json.Marshal(f)
	if err != nil {
		return f, err
	}
	if _, err := kv.Put(ctx, key(f.Identity, f.ID), b); err != nil {
		return f, fmt.Errorf("storing fact %s of %s in %s: %w", f.ID, f.Identity, s.names.MemoryBucket(), err)
	}
	return f, nil
}

// List returns the facts of identity, oldest first ("" or "*": every
// identity's).
func (s *Store) List(ctx context.Context, identity string) ([]Fact, error) {
	filter := ">"
	if identity != "" && identity != "*" {
		if err := bus.ValidateToken("identity", identity); err != nil {
			return nil, err
		}
		filter = identity + ".*"
	}
	kv, err := s.bucket(ctx)
	if err != nil {
		return nil, err
	}
	w, err := kv.WatchFiltered(ctx, []string{filter}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.names.MemoryBucket(), err)
	}
	defer func() { _ = w.Stop() }()
	var out []Fact
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e := <-w.Updates():
			if e == nil { // the facts stored so far are all read
				slices.SortStableFunc(out, func(a, b Fact) int { return a.At.Compare(b.At) })
				return out, nil
			}
			var f Fact
			if err := json.Unmarshal(e.Value(), &f); err != nil {
				continue // not a fact: nothing to recall
			}
			out = append(out, f)
		}
	}
}

// Remove deletes fact id of identity; ErrNotFound when there is none.
func (s *Store) Remove(ctx context.Context, identity, id string) error {
	if err := bus.ValidateToken("identity", identity); err != nil {
		return err
	}
	if err := bus.ValidateToken("fact id", id); err != nil {
		return err
	}
	kv, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	if _, err := kv.Get(ctx, key(identity, id)); errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("%w: %s has no fact %s: list them with `agentmesh memory ls %s`", ErrNotFound, identity, id, identity)
	} else if err != nil {
		return err
	}
	return kv.Purge(ctx, key(identity, id))
}

// Recall returns identity's facts that match message best, by BM25 over
// their texts (rank.BM25), at most k and together at most budget
// characters; facts sharing no term with the message are left out.
func (s *Store) Recall(ctx context.Context, identity, message string, k, budget int) ([]Fact, error) {
	facts, err := s.List(ctx, identity)
	if err != nil || len(facts) == 0 {
		return nil, err
	}
	docs := make([]rank.Doc, len(facts))
	for i, f := range facts {
		docs[i] = rank.NewDoc(f.Text, nil)
	}
	var out []Fact
	used := 0
	for _, r := range rank.BM25(docs, rank.Terms(message)) {
		f := facts[r.At]
		if len(out) == k || used+len(f.Text) > budget {
			break
		}
		used += len(f.Text)
		out = append(out, f)
	}
	return out, nil
}

func key(identity, id string) string { return identity + "." + id }
