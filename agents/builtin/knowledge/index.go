package knowledge

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
	"github.com/agentmesh/agentmesh/internal/rank"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// Retrieval modes.
const (
	ModeLexical = "lexical" // BM25 over the chunks' words
	ModeDense   = "dense"   // cosine of embeddings (needs a model)
	ModeFused   = "fused"   // both, by reciprocal rank fusion (needs a model)
)

// embedBatch is how many chunks go to the embedding model in one call.
const embedBatch = 64

// EnvEmbedModel is the variable that names the embedding model (package
// llm reads it).
const EnvEmbedModel = "AGENTMESH_EMBED_MODEL"

// Embedder turns texts into vectors, one per text, in order, and says
// what the call used. Implementations must be safe for concurrent use.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, schemas.Usage, error)
}

// EmbedderFunc adapts a function to an Embedder.
type EmbedderFunc func(ctx context.Context, texts []string) ([][]float32, schemas.Usage, error)

// Embed calls f.
func (f EmbedderFunc) Embed(ctx context.Context, texts []string) ([][]float32, schemas.Usage, error) {
	return f(ctx, texts)
}

// Query is one search.
type Query struct {
	Text    string
	Base    string            // knowledge base; "" searches every stored document
	FileIDs []string          // when set, only these of the base's documents
	Filters map[string]string // document metadata that must match (see matches)
	TopK    int
	Mode    string // "" is fused with a model, lexical without
}

// Found is a search's answer: the chunks best first, the documents
// searched, those skipped and why, and what embedding cost.
type Found struct {
	Chunks   schemas.Chunks
	Searched int
	Skipped  []string
	Usage    schemas.Usage
}

// Index searches knowledge bases. It keeps each document's chunks in
// memory once read, keyed by what they were built from; a document whose
// content, chunking or embedding model changed is chunked again, alone,
// and its index object replaced. It is safe for concurrent use.
type Index struct {
	cat      resolvers.Catalog
	store    *Store
	embedder Embedder // nil: lexical only
	model    string
	chunking ChunkOptions

	mu    sync.Mutex
	cache map[string]*entry // by file id
	built atomic.Int64
}

// entry is one document's chunks ready to rank.
type entry struct {
	key      string
	filename string
	failed   string // why the document could not be read
	pieces   []Piece
	docs     []rank.Doc
}

// Built is how many documents this Index chunked (and embedded) itself,
// rather than reading their index from the store.
func (x *Index) Built() int64 { return x.built.Load() }

// key names what an index is built from: the content, the chunking and
// the embedding model.
func (x *Index) key(ref schemas.FileRef) string {
	return fmt.Sprintf("sha256=%s chunking=%s/%d/%d model=%s", ref.SHA256, ChunkVersion, x.chunking.MaxChars, x.chunking.Overlap, x.model)
}

// Search answers q.
func (x *Index) Search(ctx context.Context, q Query) (Found, error) {
	var f Found
	mode := q.Mode
	if mode == "" {
		mode = ModeLexical
		if x.embedder != nil {
			mode = ModeFused
		}
	}
	switch mode {
	case ModeLexical, ModeDense, ModeFused:
	default:
		return f, fileagent.Failf(schemas.CodeInvalidParams, "mode %q is unknown: use lexical, dense or fused", mode)
	}
	if mode != ModeLexical && x.embedder == nil {
		return f, fileagent.Failf(schemas.CodeInvalidParams, "mode %q needs an embedding model: set %s (docs/knowledge.md), or use mode lexical", mode, EnvEmbedModel)
	}
	refs, err := x.documents(ctx, q, &f)
	if err != nil {
		return f, err
	}
	var (
		docs []rank.Doc
		from []chunkRef
	)
	for _, ref := range refs {
		e, err := x.entry(ctx, ref, &f.Usage)
		if err != nil {
			if ctx.Err() != nil {
				return f, ctx.Err()
			}
			if errors.As(err, new(embedError)) {
				return f, err // the model's failure, not the document's: the task fails with its code
			}
			f.Skipped = append(f.Skipped, fmt.Sprintf("%s: %v", fileagent.DisplayName(ref), err))
			continue
		}
		if e.failed != "" {
			f.Skipped = append(f.Skipped, fmt.Sprintf("%s: %s", fileagent.DisplayName(ref), e.failed))
			continue
		}
		f.Searched++
		for i := range e.pieces {
			docs = append(docs, e.docs[i])
			from = append(from, chunkRef{ref: ref, e: e, i: i})
		}
	}
	var ranked []rank.Scored
	switch mode {
	case ModeLexical:
		ranked = rank.BM25(docs, rank.Terms(q.Text))
	case ModeDense, ModeFused:
		vecs, usage, err := x.embedder.Embed(ctx, []string{q.Text})
		f.Usage = f.Usage.Add(usage)
		if err == nil && len(vecs) != 1 {
			err = fmt.Errorf("the model answered %d vectors for 1 text", len(vecs))
		}
		if err != nil {
			return f, fmt.Errorf("embedding the query: %w", err)
		}
		ranked = rank.Dense(docs, vecs[0])
		if mode == ModeFused {
			ranked = rank.Fuse(rank.BM25(docs, rank.Terms(q.Text)), ranked)
		}
	}
	f.Chunks = make(schemas.Chunks, 0, min(len(ranked), q.TopK))
	for _, s := range ranked[:min(len(ranked), q.TopK)] {
		c := from[s.At]
		p := c.e.pieces[c.i]
		f.Chunks = append(f.Chunks, schemas.Chunk{Text: p.Text, FileID: c.ref.ID, Position: p.Position, Score: s.Score,
			Filename: c.e.filename, Heading: p.Heading})
	}
	return f, nil
}

// chunkRef says where a ranked chunk comes from.
type chunkRef struct {
	ref schemas.FileRef
	e   *entry
	i   int
}

// documents are the stored documents q searches, in id order: the base's
// (every stored document without one), narrowed to q.FileIDs and
// q.Filters. Documents of the base no longer stored are skipped.
func (x *Index) documents(ctx context.Context, q Query, f *Found) ([]schemas.FileRef, error) {
	set, err := resolvers.Snapshot(ctx, x.cat)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]schemas.FileRef, len(set.Files))
	for _, sf := range set.Files {
		byID[sf.Ref.ID] = sf.Ref
	}
	var ids []string
	if q.Base == "" {
		for _, sf := range set.Files {
			ids = append(ids, sf.Ref.ID)
		}
	} else {
		b, err := x.store.Get(ctx, q.Base)
		if err != nil {
			if errors.Is(err, ErrNoBase) || errors.Is(err, ErrInvalidName) {
				return nil, fileagent.Failf(schemas.CodeOf(err), "%v", err)
			}
			return nil, err
		}
		ids = slices.Sorted(slices.Values(b.Documents))
	}
	if len(q.FileIDs) > 0 {
		ids = slices.DeleteFunc(ids, func(id string) bool { return !slices.Contains(q.FileIDs, id) })
		if len(ids) == 0 {
			return nil, fileagent.Failf(schemas.CodeNotFound, "none of the %s given is a document of knowledge base %q", schemas.Plural(len(q.FileIDs), "file", "files"), q.Base)
		}
	}
	var out []schemas.FileRef
	for _, id := range ids {
		ref, ok := byID[id]
		if !ok {
			// Stored a moment ago by another process, or gone.
			r, err := x.cat.ResolveMetadata(ctx, id)
			if err != nil {
				if errors.Is(err, resolvers.ErrNotFound) {
					x.forget(ctx, id)
				}
				if q.Base != "" {
					f.Skipped = append(f.Skipped, fmt.Sprintf("%s is no longer stored", id))
				}
				continue
			}
			ref = r
		}
		if fileagent.DocumentType(ref.MediaType, ref.Filename) == "" {
			if q.Base != "" {
				f.Skipped = append(f.Skipped, fmt.Sprintf("%s is %s, not a document", fileagent.DisplayName(ref), fileagent.MediaTypeOf(ref)))
			}
			continue
		}
		if matches(ref, q.Filters) {
			out = append(out, ref)
		}
	}
	return out, nil
}

// forget drops the index of a document that is no longer stored, from
// memory and from the store (a failure leaves it for the next search).
func (x *Index) forget(ctx context.Context, id string) {
	x.mu.Lock()
	delete(x.cache, id)
	x.mu.Unlock()
	x.store.dropRecord(ctx, id)
}

// matches reports whether a document's metadata satisfies every filter:
// "tags" holds the tag, "filename" matches the glob (path.Match), any
// other key equals the value.
func matches(ref schemas.FileRef, filters map[string]string) bool {
	for k, want := range filters {
		switch k {
		case resolvers.MetaTags:
			if !slices.Contains(strings.Split(ref.Metadata[resolvers.MetaTags], ","), want) {
				return false
			}
		case resolvers.MetaFilename:
			if ok, _ := path.Match(want, ref.Filename); !ok {
				return false
			}
		default:
			if ref.Metadata[k] != want {
				return false
			}
		}
	}
	return true
}

// entry returns the chunks of a document: from memory, else from its
// stored index, else chunked (and embedded) now and stored.
func (x *Index) entry(ctx context.Context, ref schemas.FileRef, usage *schemas.Usage) (*entry, error) {
	key := x.key(ref)
	x.mu.Lock()
	e := x.cache[ref.ID]
	x.mu.Unlock()
	if e != nil && e.key == key {
		return e, nil
	}
	rec, ok, err := x.store.record(ctx, ref.ID)
	if err != nil {
		return nil, err
	}
	if !ok || rec.Key != key {
		if rec, err = x.build(ctx, ref, key, usage); err != nil {
			return nil, err
		}
	}
	e = entryOf(rec)
	x.mu.Lock()
	x.cache[ref.ID] = e
	x.mu.Unlock()
	return e, nil
}

// build chunks and embeds a document and stores its index. A document
// that cannot be read is recorded as such, so that it is not read again
// until it changes.
func (x *Index) build(ctx context.Context, ref schemas.FileRef, key string, usage *schemas.Usage) (record, error) {
	rec := record{FileID: ref.ID, Filename: ref.Filename, Key: key}
	content, err := x.cat.Resolve(ctx, ref.ID)
	if err != nil {
		return rec, err
	}
	pieces, err := chunkDocument(content, fileagent.DocumentType(ref.MediaType, ref.Filename), x.chunking)
	if err != nil {
		rec.Error = err.Error()
	}
	for _, p := range pieces {
		rec.Chunks = append(rec.Chunks, recordChunk{Text: p.Text, Heading: p.Heading})
	}
	if x.embedder != nil {
		for start := 0; start < len(pieces); start += embedBatch {
			batch := pieces[start:min(start+embedBatch, len(pieces))]
			texts := make([]string, len(batch))
			for i, p := range batch {
				texts[i] = embedText(p)
			}
			vecs, u, err := x.embedder.Embed(ctx, texts)
			*usage = usage.Add(u)
			if err == nil && len(vecs) != len(texts) {
				err = fmt.Errorf("the model answered %d vectors for %d texts", len(vecs), len(texts))
			}
			if err != nil {
				return rec, embedError{fmt.Errorf("embedding the chunks of %s: %w", fileagent.DisplayName(ref), err)}
			}
			for i, v := range vecs {
				rec.Chunks[start+i].Vector = encodeVector(v)
			}
		}
	}
	if err := x.store.putRecord(ctx, rec); err != nil {
		return rec, err
	}
	x.built.Add(1)
	return rec, nil
}

// embedError is a failure of the embedding model while indexing.
type embedError struct{ err error }

func (e embedError) Error() string { return e.err.Error() }
func (e embedError) Unwrap() error { return e.err }

// chunkDocument extracts a document's text and splits it: Markdown from
// its source, so that its headings make sections.
func chunkDocument(content []byte, mediaType string, o ChunkOptions) ([]Piece, error) {
	if mediaType == fileagent.MediaMarkdown {
		return Split(strings.ToValidUTF8(fileagent.Cut(string(content), fileagent.MaxExtractBytes), "\uFFFD"), mediaType, o), nil
	}
	text, err := fileagent.ExtractText(content, mediaType)
	if err != nil {
		return nil, err
	}
	return Split(text, mediaType, o), nil
}

// embedText is what is embedded of a chunk: its heading and its text.
func embedText(p Piece) string {
	if p.Heading == "" {
		return p.Text
	}
	return p.Heading + "\n" + p.Text
}

// entryOf makes a stored index ready to rank.
func entryOf(r record) *entry {
	e := &entry{key: r.Key, filename: r.Filename, failed: r.Error}
	for i, c := range r.Chunks {
		p := Piece{Text: c.Text, Heading: c.Heading, Position: i}
		e.pieces = append(e.pieces, p)
		e.docs = append(e.docs, rank.NewDoc(p.Heading+" "+p.Text, decodeVector(c.Vector)))
	}
	return e
}
