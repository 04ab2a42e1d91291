package resolvers

import (
	"context"
	"io"
	"iter"

	"github.com/agentmesh/agentmesh/schemas"
)

// File is a resolved file: its reference and its content.
type File struct {
	Ref     schemas.FileRef
	Content []byte
}

// FileResolver turns file IDs into content and stores new content. IDs travel
// through the mesh; content moves only when an agent asks for it.
//
// A missing file is an error matching ErrNotFound with errors.Is.
type FileResolver interface {
	// Resolve returns the whole content of a file.
	Resolve(ctx context.Context, id string) ([]byte, error)
	// ResolveBatch resolves many files with bounded parallelism, yielding
	// them in the order of ids; a failed file yields its error and the
	// iteration goes on.
	ResolveBatch(ctx context.Context, ids []string) iter.Seq2[File, error]
	// ResolveMetadata returns a file's reference without its content.
	ResolveMetadata(ctx context.Context, id string) (schemas.FileRef, error)
	// Store saves content, sniffing the media type when mediaType is "", and
	// returns the new file's reference.
	Store(ctx context.Context, content io.Reader, mediaType string, metadata map[string]string) (schemas.FileRef, error)
}

// Catalog is what a resolver that owns its files can do beyond resolving:
// stream, list, re-tag and delete. The object store resolver implements it.
type Catalog interface {
	FileResolver
	// Open streams a file's content; the caller closes it.
	Open(ctx context.Context, id string) (io.ReadCloser, schemas.FileRef, error)
	// List yields every file's reference.
	List(ctx context.Context) iter.Seq2[schemas.FileRef, error]
	// UpdateMetadata changes a file's metadata without rewriting its content.
	UpdateMetadata(ctx context.Context, id string, update func(meta map[string]string)) (schemas.FileRef, error)
	// Delete removes a file.
	Delete(ctx context.Context, id string) error
}
