// Package memory keeps the facts a mesh remembers across conversations:
// one key per fact in the memory bucket (bus.Names.MemoryBucket), under
// the identity the fact belongs to, <identity>.<fact id>. The chat loop
// writes facts (the model's remember tool, the slots an operator names)
// and recalls the ones that match a turn's message, ranked by the same
// retrieval as the knowledge agent's (internal/rank): BM25, and with an
// embedding model (WithEmbedder) the cosine of embeddings too, the two
// fused; `agentmesh memory ls|rm` and the dashboard list and remove them.
package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/rank"
	"github.com/agentmesh/agentmesh/schemas"
)

// Limits of the memory.
const (
	MaxFactRunes = 500 // a fact's text, in characters
	MaxFacts     = 200 // facts one identity may keep; recall reads them all
	// MaxVectorDims bounds the embedding stored with a fact (one byte a
	// dimension, see vector): a model's longer vectors are not stored, nor
	// is one that would make the fact's record larger than the bucket's
	// bus.MaxMemoryValue; such a fact is embedded again at each recall.
	MaxVectorDims = 2048
	// MinSimilarity is the cosine a fact's embedding must reach with the
	// message's for dense ranking to recall it: below it a fact is
	// unrelated, and only a shared term recalls it.
	MinSimilarity = 0.2
)

// Embedder turns texts into vectors, one per text, in order (the
// knowledge agent's embedder is one).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, schemas.Usage, error)
}

// Option configures a Store.
type Option func(*Store)

// WithEmbedder ranks facts densely as well as lexically, fused, as the
// knowledge agent does: a fact is embedded by e when it is remembered and
// its vector stored with it (under model's name); facts stored without
// one (before the model was configured, or by another model) are embedded
// when they are first recalled and stored back. The usage of these calls
// is not counted against a turn's budget.
func WithEmbedder(e Embedder, model string) Option {
	return func(s *Store) { s.embedder, s.model = e, model }
}

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

// stored is a fact as the bucket keeps it: with its embedding, when a
// model made one. Lists leave the vector out.
type stored struct {
	Fact
	Vector vector `json:"vector,omitempty"`
	Model  string `json:"embed_model,omitempty"`
}

// vector is an embedding as the bucket keeps it: each component scaled
// by the largest one's magnitude to a signed byte, base64 in JSON, so that
// a 1,536-dimension vector takes 2 KiB. Cosine ignores the scale; the
// rounding moves it by well under a hundredth.
type vector []float32

func (v vector) MarshalJSON() ([]byte, error) {
	peak := float32(0)
	for _, x := range v {
		peak = max(peak, x, -x)
	}
	b := make([]byte, len(v))
	for i, x := range v {
		if peak > 0 {
			b[i] = byte(int8(math.Round(float64(x / peak * 127))))
		}
	}
	return json.Marshal(b) // []byte marshals as base64
}

func (v *vector) UnmarshalJSON(data []byte) error {
	var b []byte
	if err := json.Unmarshal(data, &b); err != nil {
		return err
	}
	*v = make(vector, len(b))
	for i, x := range b {
		(*v)[i] = float32(int8(x)) / 127
	}
	return nil
}

// Store reads and writes the memory bucket. The bucket is looked up (and
// made, on a mesh provisioned before it) on first use. A Store is safe for
// concurrent use.
type Store struct {
	js    jetstream.JetStream
	names bus.Names

	embedder Embedder // nil: lexical only
	model    string

	mu sync.Mutex
	kv jetstream.KeyValue
}

// New returns the memory of the mesh js and names reach. Options:
// WithEmbedder.
func New(js jetstream.JetStream, names bus.Names, opts ...Option) *Store {
	s := &Store{js: js, names: names}
	for _, o := range opts {
		o(s)
	}
	return s
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
// that already keeps MaxFacts other facts with ErrFull. With an embedder
// the text's vector is stored with it; when the model fails the fact is
// stored without one (and embedded when it is recalled).
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
	rec := stored{Fact: f}
	if s.embedder != nil {
		if vecs, _, err := s.embedder.Embed(ctx, []string{f.Text}); err == nil && len(vecs) == 1 && len(vecs[0]) <= MaxVectorDims {
			rec.Vector, rec.Model = vecs[0], s.model
		}
	}
	b, err := json.Marshal(rec)
	if err == nil && len(b) > bus.MaxMemoryValue && rec.Vector != nil {
		rec.Vector, rec.Model = nil, "" // the text alone fits: embedded at recall
		b, err = json.Marshal(rec)
	}
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
	recs, err := s.list(ctx, identity)
	if err != nil {
		return nil, err
	}
	out := make([]Fact, len(recs))
	for i, r := range recs {
		out[i] = r.Fact
	}
	return out, nil
}

// entry is a stored fact with the revision of its key.
type entry struct {
	stored
	rev uint64
}

// list is List with the vectors and revisions.
func (s *Store) list(ctx context.Context, identity string) ([]entry, error) {
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
	var out []entry
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e := <-w.Updates():
			if e == nil { // the facts stored so far are all read
				slices.SortStableFunc(out, func(a, b entry) int { return a.At.Compare(b.At) })
				return out, nil
			}
			var f stored
			if err := json.Unmarshal(e.Value(), &f); err != nil {
				continue // not a fact: nothing to recall
			}
			out = append(out, entry{stored: f, rev: e.Revision()})
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

// Recall returns identity's facts that match message best, at most k and
// together at most budget characters. Without an embedder they are ranked
// by BM25 over their texts (rank.BM25) and facts sharing no term with the
// message are left out; with one, the BM25 ranking and the ranking by the
// cosine of their embeddings with the message's (facts under
// MinSimilarity left out) are fused by reciprocal rank fusion
// (rank.Fuse), as the knowledge agent's fused mode does. When the model
// fails, recall falls back to BM25 alone and says why in the error along
// with the lexical facts.
func (s *Store) Recall(ctx context.Context, identity, message string, k, budget int) ([]Fact, error) {
	recs, err := s.list(ctx, identity)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	docs := make([]rank.Doc, len(recs))
	for i, r := range recs {
		docs[i] = rank.NewDoc(r.Text, nil)
	}
	ranked := rank.BM25(docs, rank.Terms(message))
	var embedErr error
	if s.embedder != nil {
		var dense []rank.Scored
		dense, embedErr = s.dense(ctx, recs, docs, message)
		if embedErr == nil {
			ranked = rank.Fuse(ranked, dense)
		}
	}
	var out []Fact
	used := 0
	for _, r := range ranked {
		f := recs[r.At].Fact
		if len(out) == k || used+len(f.Text) > budget {
			break
		}
		used += len(f.Text)
		out = append(out, f)
	}
	if embedErr != nil {
		embedErr = fmt.Errorf("memory: ranking lexically only, the embedding model failed: %w", embedErr)
	}
	return out, embedErr
}

// dense ranks the facts by the cosine of their vectors with message's,
// leaving out those under MinSimilarity. The message and the facts
// without a vector of this model are embedded in one call; those facts'
// vectors are stored back (a fact changed or removed meanwhile is left as
// it is).
func (s *Store) dense(ctx context.Context, recs []entry, docs []rank.Doc, message string) ([]rank.Scored, error) {
	texts := []string{message}
	var missing []int
	for i, r := range recs {
		if len(r.Vector) == 0 || r.Model != s.model {
			missing = append(missing, i)
			texts = append(texts, r.Text)
		}
	}
	vecs, _, err := s.embedder.Embed(ctx, texts)
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("the model answered %d vectors for %d texts", len(vecs), len(texts))
	}
	if err != nil {
		return nil, err
	}
	kv, err := s.bucket(ctx)
	if err != nil {
		return nil, err
	}
	for j, i := range missing {
		if len(vecs[j+1]) > MaxVectorDims {
			continue
		}
		recs[i].Vector, recs[i].Model = vecs[j+1], s.model
		if b, err := json.Marshal(recs[i].stored); err == nil && len(b) <= bus.MaxMemoryValue {
			_, _ = kv.Update(ctx, key(recs[i].Identity, recs[i].ID), b, recs[i].rev) // best effort: recalled next time otherwise
		}
	}
	for i, r := range recs {
		docs[i].Vector = r.Vector
	}
	var out []rank.Scored
	for _, d := range rank.Dense(docs, vecs[0]) {
		if d.Score >= MinSimilarity {
			out = append(out, d)
		}
	}
	return out, nil
}

func key(identity, id string) string { return identity + "." + id }
