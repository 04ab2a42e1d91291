package resolvers

import "errors"

var (
	// ErrNotFound reports a file or spilled collection that does not exist.
	ErrNotFound = errors.New("file not found")
	// ErrOutsideRoot reports a local-directory ID that would escape the root:
	// a ".." segment, an absolute path, an encoded traversal, a backslash, a
	// NUL byte or a symlink pointing outside.
	ErrOutsideRoot = errors.New("file id escapes the resolver root")
	// ErrInvalidID reports an ID that is empty or not a valid name.
	ErrInvalidID = errors.New("invalid file id")
	// ErrCorruptCollection reports a spilled collection whose stored content
	// does not match its reference (bad JSON, wrong count).
	ErrCorruptCollection = errors.New("spilled collection is corrupt")
)
