package resolvers

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/schemas"
)

// Metadata keys the object store resolver keeps in an object's metadata next
// to the user's own keys (such as MetaTags and MetaFolder).
const (
	// MetaFilename is the file's original name.
	MetaFilename = "filename"
	// MetaMediaType is the sniffed or given media type.
	MetaMediaType = "media_type"
	// MetaTags is a comma-separated list of tags.
	MetaTags = "tags"
	// MetaFolder is the folder a file is organised into.
	MetaFolder = "folder"
)

// DefaultParallelism bounds how many files ResolveBatch fetches at once.
const DefaultParallelism = 8

// Option configures an ObjectStore.
type Option func(*ObjectStore)

// WithParallelism bounds how many files ResolveBatch fetches at once (n < 1
// means DefaultParallelism).
func WithParallelism(n int) Option {
	return func(o *ObjectStore) {
		if n >= 1 {
			o.parallel = n
		}
	}
}

// ObjectStore is the default resolver: files live in the JetStream object
// store mesh_files under generated IDs ("f-" and 20 base32 characters), with
// their filename, media type and user metadata in the object's metadata and
// their size and sha256 in its info. Content is streamed in both directions,
// so a file never sits whole in memory unless Resolve is asked for it.
// Objects under CollectionPrefix and KnowledgePrefix are the mesh's own, not
// files (Reserved).
//
// An ObjectStore is safe for concurrent use.
type ObjectStore struct {
	obs       jetstream.ObjectStore
	storeName string        // FileRef.Store of obs's files (WithStoreName)
	owned     *ownedBuckets // the owners' buckets (WithOwnerBuckets), or nil
	parallel  int
	index     atomic.Pointer[fileIndex] // set by Index while it watches
}

var _ Catalog = (*ObjectStore)(nil)

// NewObjectStore returns a resolver on obs, normally bus.Resources.Files.
// Options: WithParallelism, WithStoreName, WithOwnerBuckets.
func NewObjectStore(obs jetstream.ObjectStore, opts ...Option) *ObjectStore {
	o := &ObjectStore{obs: obs, parallel: DefaultParallelism}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewFileID returns a new unique file ID: "f-" and 20 lowercase base32
// characters (100 random bits), a valid NATS subject token.
func NewFileID() string {
	var b [13]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "f-" + strings.ToLower(idEncoding.EncodeToString(b[:]))[:20]
}

// Store streams content into the object store under a new ID. The media type
// is sniffed from the first bytes and the file's name when mediaType is
// generic (GenericMediaType: "", application/octet-stream, a form's
// encoding), so the search agents see what the file is. metadata[MetaFilename]
// names the file; every other key is kept as user metadata.
//
// Made in a task (the context the agent runtime gives Execute), the write
// is a step of the task's journal (schemas.Step, step name "file"): a
// redelivered task gets the file stored the first time, its content not
// read, and no second file is made.
func (o *ObjectStore) Store(ctx context.Context, content io.Reader, mediaType string, metadata map[string]string) (schemas.FileRef, error) {
	return schemas.Step(ctx, StepFile, func(ctx context.Context, _ string) (schemas.FileRef, error) {
		return o.store(ctx, content, mediaType, metadata)
	})
}

// StepFile is the step name of an object-store write made in a task: its
// journal key is <task>.file.<n> (docs/durability.md).
const StepFile = "file"

// store is Store, made every time.
func (o *ObjectStore) store(ctx context.Context, content io.Reader, mediaType string, metadata map[string]string) (schemas.FileRef, error) {
	head := make([]byte, SniffLen)
	n, err := io.ReadFull(content, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return schemas.FileRef{}, fmt.Errorf("store %q: reading content: %w", metadata[MetaFilename], err)
	}
	head = head[:n]
	if GenericMediaType(mediaType) {
		mediaType = SniffMediaType(head, metadata[MetaFilename])
	}
	meta := maps.Clone(metadata)
	if meta == nil {
		meta = map[string]string{}
	}
	meta[MetaMediaType] = mediaType
	if meta[MetaFilename] == "" {
		delete(meta, MetaFilename)
	}
	id := NewFileID()
	obs, store, err := o.bucketFor(ctx)
	if err != nil {
		return schemas.FileRef{}, fmt.Errorf("store %q: %w", metadata[MetaFilename], err)
	}

	// The object store hashes the chunks as it sends them; its digest is the
	// sha256 of exactly the bytes read here, so hashing again would only
	// cost throughput. The count checks that nothing was lost on the way.
	body := &countingReader{r: io.MultiReader(bytes.NewReader(head), content)}
	info, err := obs.Put(ctx, jetstream.ObjectMeta{Name: id, Metadata: meta}, fullReader{body})
	if err != nil {
		return schemas.FileRef{}, fmt.Errorf("store %q as %s: %w", metadata[MetaFilename], id, err)
	}
	ref := refFromInfo(info, store)
	if ref.Size != body.n || ref.SHA256 == "" {
		return ref, errors.Join(
			fmt.Errorf("store %s: the object store recorded %d bytes and digest %q for %d bytes read", id, ref.Size, info.Digest, body.n),
			obs.Delete(ctx, id))
	}
	if obs == o.obs {
		o.index.Load().set(id, &ref) // this process reads its own writes at once
	}
	return ref, nil
}

// Open streams a file's content. The caller reads it to the end or closes it.
func (o *ObjectStore) Open(ctx context.Context, id string) (io.ReadCloser, schemas.FileRef, error) {
	if err := checkFileID(id); err != nil {
		return nil, schemas.FileRef{}, err
	}
	var (
		res jetstream.ObjectResult
		ref schemas.FileRef
	)
	err := o.lookup(ctx, func(obs jetstream.ObjectStore, store string) error {
		r, err := obs.Get(ctx, id)
		if err != nil {
			return err
		}
		info, err := r.Info()
		if err != nil {
			r.Close()
			return err
		}
		res, ref = r, refFromInfo(info, store)
		return nil
	})
	if err != nil {
		return nil, schemas.FileRef{}, o.wrap(id, err)
	}
	return res, ref, nil
}

// Resolve reads a whole file.
func (o *ObjectStore) Resolve(ctx context.Context, id string) ([]byte, error) {
	rc, ref, err := o.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := bytes.NewBuffer(make([]byte, 0, ref.Size))
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, fmt.Errorf("resolve %s: %w", id, err)
	}
	return buf.Bytes(), nil
}

// ResolveBatch reads files with at most the configured number in flight,
// yielding them in the order of ids. Stopping the iteration early cancels the
// fetches still running.
func (o *ObjectStore) ResolveBatch(ctx context.Context, ids []string) iter.Seq2[File, error] {
	return resolveBatch(ctx, ids, o.parallel, func(ctx context.Context, id string) (File, error) {
		rc, ref, err := o.Open(ctx, id)
		if err != nil {
			return File{Ref: schemas.FileRef{ID: id}}, err
		}
		defer rc.Close()
		buf := bytes.NewBuffer(make([]byte, 0, ref.Size))
		if _, err := buf.ReadFrom(rc); err != nil {
			return File{Ref: ref}, fmt.Errorf("resolve %s: %w", id, err)
		}
		return File{Ref: ref, Content: buf.Bytes()}, nil
	})
}

// ResolveMetadata returns a file's reference without reading its content.
func (o *ObjectStore) ResolveMetadata(ctx context.Context, id string) (schemas.FileRef, error) {
	if err := checkFileID(id); err != nil {
		return schemas.FileRef{}, err
	}
	var ref schemas.FileRef
	err := o.lookup(ctx, func(obs jetstream.ObjectStore, store string) error {
		info, err := obs.GetInfo(ctx, id)
		if err == nil {
			ref = refFromInfo(info, store)
		}
		return err
	})
	if err != nil {
		return schemas.FileRef{}, o.wrap(id, err)
	}
	return ref, nil
}

// List yields every file's reference in the store's order, skipping spilled
// collections; while Index watches the store, it yields them from the index
// in the order of their ids.
func (o *ObjectStore) List(ctx context.Context) iter.Seq2[schemas.FileRef, error] {
	if x := o.index.Load(); x != nil {
		return x.list()
	}
	return func(yield func(schemas.FileRef, error) bool) {
		infos, err := o.obs.List(ctx)
		if errors.Is(err, jetstream.ErrNoObjectsFound) {
			return
		}
		if err != nil {
			yield(schemas.FileRef{}, fmt.Errorf("list files: %w", err))
			return
		}
		for _, info := range infos {
			if info.Deleted || Reserved(info.Name) {
				continue
			}
			if !yield(refFromInfo(info, o.storeName), nil) {
				return
			}
		}
	}
}

// UpdateMetadata calls update with a copy of the file's metadata (user keys
// plus MetaFilename and MetaMediaType) and stores the result without touching
// the content. Concurrent updates of one file: the last one wins.
func (o *ObjectStore) UpdateMetadata(ctx context.Context, id string, update func(meta map[string]string)) (schemas.FileRef, error) {
	if err := checkFileID(id); err != nil {
		return schemas.FileRef{}, err
	}
	var ref schemas.FileRef
	err := o.lookup(ctx, func(obs jetstream.ObjectStore, store string) error {
		info, err := obs.GetInfo(ctx, id)
		if err != nil {
			return err
		}
		meta := maps.Clone(info.Metadata)
		if meta == nil {
			meta = map[string]string{}
		}
		update(meta)
		for k, v := range meta {
			if v == "" {
				delete(meta, k)
			}
		}
		if err := obs.UpdateMeta(ctx, id, jetstream.ObjectMeta{Name: id, Description: info.Description, Headers: info.Headers, Metadata: meta}); err != nil {
			return err
		}
		info.Metadata = meta
		ref = refFromInfo(info, store)
		if obs == o.obs {
			o.index.Load().set(id, &ref)
		}
		return nil
	})
	if err != nil {
		return schemas.FileRef{}, o.wrap(id, err)
	}
	return ref, nil
}

// Delete removes a file and its content.
func (o *ObjectStore) Delete(ctx context.Context, id string) error {
	if err := checkFileID(id); err != nil {
		return err
	}
	err := o.lookup(ctx, func(obs jetstream.ObjectStore, _ string) error {
		if _, err := obs.GetInfo(ctx, id); err != nil {
			return err
		}
		if err := obs.Delete(ctx, id); err != nil {
			return err
		}
		if obs == o.obs {
			o.index.Load().set(id, nil)
		}
		return nil
	})
	if err != nil {
		return o.wrap(id, err)
	}
	return nil
}

func (o *ObjectStore) wrap(id string, err error) error {
	if errors.Is(err, jetstream.ErrObjectNotFound) || errors.Is(err, jetstream.ErrUpdateMetaDeleted) {
		return fmt.Errorf("%w: %q (check the id with `agentmesh files ls`)", ErrNotFound, id)
	}
	return fmt.Errorf("file %q: %w", id, err)
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// checkFileID refuses IDs that cannot name a file in the object store.
func checkFileID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: the id is empty", ErrInvalidID)
	case strings.HasPrefix(id, CollectionPrefix):
		return fmt.Errorf("%w: %q is a spilled collection, not a file; resolve it with Collections", ErrInvalidID, id)
	case strings.HasPrefix(id, KnowledgePrefix):
		return fmt.Errorf("%w: %q is a knowledge base's, not a file; use agentmesh kb", ErrInvalidID, id)
	}
	return nil
}

// refFromInfo builds a FileRef from an object's info: filename and media type
// from its metadata, size and sha256 from the object itself, and store for
// the bucket it names (FileRef.Store).
func refFromInfo(info *jetstream.ObjectInfo, store string) schemas.FileRef {
	ref := schemas.FileRef{
		Store:     store,
		ID:        info.Name,
		MediaType: info.Metadata[MetaMediaType],
		Filename:  info.Metadata[MetaFilename],
		Size:      int64(info.Size),
		SHA256:    digestHex(info.Digest),
	}
	for k, v := range info.Metadata {
		if k == MetaMediaType || k == MetaFilename {
			continue
		}
		if ref.Metadata == nil {
			ref.Metadata = map[string]string{}
		}
		ref.Metadata[k] = v
	}
	return ref
}

// digestHex turns the object store's "SHA-256=<base64url>" digest into hex.
func digestHex(d string) string {
	b64, ok := strings.CutPrefix(d, "SHA-256=")
	if !ok {
		return ""
	}
	sum, err := base64.URLEncoding.DecodeString(b64)
	if err != nil {
		return ""
	}
	return hex.EncodeToString(sum)
}

// resolveBatch runs fetch over ids with at most parallel calls in flight and
// yields the results in order. It holds at most parallel results at a time.
func resolveBatch(ctx context.Context, ids []string, parallel int, fetch func(context.Context, string) (File, error)) iter.Seq2[File, error] {
	if parallel < 1 {
		parallel = DefaultParallelism
	}
	return func(yield func(File, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		type result struct {
			f   File
			err error
		}
		window := make([]chan result, 0, parallel)
		next := 0
		for len(window) > 0 || next < len(ids) {
			for len(window) < parallel && next < len(ids) {
				ch := make(chan result, 1)
				window = append(window, ch)
				id := ids[next]
				next++
				wg.Go(func() {
					f, err := fetch(ctx, id)
					ch <- result{f, err}
				})
			}
			r := <-window[0]
			window = window[1:]
			if !yield(r.f, r.err) {
				return
			}
		}
	}
}
