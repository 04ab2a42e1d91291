package knowledge

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// Object names in the file store: one definition per knowledge base, one
// index per document (shared by every base that holds the document).
const (
	basePrefix  = resolvers.KnowledgePrefix + "bases/"
	indexPrefix = resolvers.KnowledgePrefix + "docs/"
)

// Base is a knowledge base: a name and the stored documents it holds.
type Base struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Documents   []string  `json:"documents"`
	Created     time.Time `json:"created"`
}

var baseName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// CheckName refuses a knowledge base name that is not 1 to 64 lower-case
// letters, digits, '-' or '_', starting with a letter or digit.
func CheckName(name string) error {
	if !baseName.MatchString(name) {
		return fmt.Errorf("%w %q: use 1 to 64 lower-case letters, digits, - or _, starting with a letter or digit (e.g. policies)", ErrInvalidName, name)
	}
	return nil
}

// Store keeps knowledge base definitions and document indexes in the
// mesh's file store under resolvers.KnowledgePrefix, where every process
// of the mesh reads them. Definitions are small JSON objects; a change is
// a read, change and write (the last writer wins).
type Store struct {
	obs jetstream.ObjectStore
}

// NewStore returns the knowledge store in obs, the mesh's file store.
func NewStore(obs jetstream.ObjectStore) *Store { return &Store{obs: obs} }

// Create makes an empty knowledge base.
func (s *Store) Create(ctx context.Context, name, description string) (Base, error) {
	if err := CheckName(name); err != nil {
		return Base{}, err
	}
	if _, err := s.obs.GetInfo(ctx, basePrefix+name); err == nil {
		return Base{}, fmt.Errorf("%w: %q; add documents with agentmesh kb add %s FILE..., or remove it first", ErrBaseExists, name, name)
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return Base{}, fmt.Errorf("knowledge base %q: %w", name, err)
	}
	b := Base{Name: name, Description: description, Documents: []string{}, Created: time.Now().UTC()}
	return b, s.put(ctx, b)
}

// Get reads a knowledge base; ErrNoBase when there is none of that name.
func (s *Store) Get(ctx context.Context, name string) (Base, error) {
	if err := CheckName(name); err != nil {
		return Base{}, err
	}
	raw, err := s.obs.GetBytes(ctx, basePrefix+name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return Base{}, fmt.Errorf("%w: %q; create it with agentmesh kb create %s (agentmesh kb ls lists them)", ErrNoBase, name, name)
	}
	if err != nil {
		return Base{}, fmt.Errorf("knowledge base %q: %w", name, err)
	}
	var b Base
	if err := json.Unmarshal(raw, &b); err != nil {
		return Base{}, fmt.Errorf("knowledge base %q: stored definition is corrupt: %w", name, err)
	}
	return b, nil
}

// Add puts documents (stored file ids) into a knowledge base; ids it
// already holds are kept once.
func (s *Store) Add(ctx context.Context, name string, ids ...string) (Base, error) {
	b, err := s.Get(ctx, name)
	if err != nil {
		return Base{}, err
	}
	for _, id := range ids {
		if !slices.Contains(b.Documents, id) {
			b.Documents = append(b.Documents, id)
		}
	}
	return b, s.put(ctx, b)
}

// Remove deletes a knowledge base's definition. The documents stay, and
// so do their indexes, which other bases may share.
func (s *Store) Remove(ctx context.Context, name string) error {
	if _, err := s.Get(ctx, name); err != nil {
		return err
	}
	if err := s.obs.Delete(ctx, basePrefix+name); err != nil {
		return fmt.Errorf("removing knowledge base %q: %w", name, err)
	}
	return nil
}

// List returns every knowledge base, by name.
func (s *Store) List(ctx context.Context) ([]Base, error) {
	infos, err := s.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing knowledge bases: %w", err)
	}
	var out []Base
	for _, info := range infos {
		name, ok := strings.CutPrefix(info.Name, basePrefix)
		if !ok || info.Deleted {
			continue
		}
		b, err := s.Get(ctx, name)
		if errors.Is(err, ErrNoBase) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b Base) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *Store) put(ctx context.Context, b Base) error {
	raw, err := json.Marshal(b)
	if err != nil {
		return err
	}
	if _, err := s.obs.PutBytes(ctx, basePrefix+b.Name, raw); err != nil {
		return fmt.Errorf("storing knowledge base %q: %w", b.Name, err)
	}
	return nil
}

// record is one document's index as stored: what it was built from (the
// content's sha256, the chunking and the embedding model) and its chunks;
// or why the document could not be read.
type record struct {
	FileID   string        `json:"file_id"`
	Filename string        `json:"filename,omitempty"`
	Key      string        `json:"key"`
	Error    string        `json:"error,omitempty"`
	Chunks   []recordChunk `json:"chunks,omitempty"`
}

type recordChunk struct {
	Text    string `json:"text"`
	Heading string `json:"heading,omitempty"`
	// Vector is the chunk's embedding, float32 little-endian in base64.
	Vector string `json:"vector,omitempty"`
}

// record reads a document's stored index; ok is false when there is none.
func (s *Store) record(ctx context.Context, fileID string) (r record, ok bool, err error) {
	raw, err := s.obs.GetBytes(ctx, indexPrefix+fileID)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, fmt.Errorf("reading the index of %s: %w", fileID, err)
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return record{}, false, nil // corrupt: built again
	}
	return r, true, nil
}

func (s *Store) putRecord(ctx context.Context, r record) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := s.obs.PutBytes(ctx, indexPrefix+r.FileID, raw); err != nil {
		return fmt.Errorf("storing the index of %s: %w", r.FileID, err)
	}
	return nil
}

// dropRecord removes a document's stored index, if there is one.
func (s *Store) dropRecord(ctx context.Context, fileID string) {
	_ = s.obs.Delete(ctx, indexPrefix+fileID)
}

// encodeVector is v as float32 little-endian in base64.
func encodeVector(v []float32) string {
	if len(v) == 0 {
		return ""
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// decodeVector reverses encodeVector; nil for anything malformed.
func decodeVector(s string) []float32 {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// IsDocument reports whether a stored file is a document a knowledge base
// can hold: plain text, Markdown, HTML or PDF.
func IsDocument(ref schemas.FileRef) bool {
	return fileagent.DocumentType(ref.MediaType, ref.Filename) != ""
}
