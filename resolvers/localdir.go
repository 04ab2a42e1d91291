package resolvers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// LocalDir resolves files in a directory: an ID is a slash-separated path
// relative to the root. Any ID that could leave the root is refused with
// ErrOutsideRoot: ".." segments, absolute paths, backslashes, NUL bytes,
// percent-encoded traversal such as "..%2f" and symlinks pointing outside.
// Files are opened through os.Root, so a symlink swapped in after the check
// cannot escape either.
//
// A LocalDir is safe for concurrent use; Close releases the root.
type LocalDir struct {
	root     *os.Root
	dir      string // absolute, symlinks resolved
	parallel int
}

var _ FileResolver = (*LocalDir)(nil)

// NewLocalDir returns a resolver rooted at the existing directory root.
func NewLocalDir(root string) (*LocalDir, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("local resolver root %q: %w", root, err)
	}
	dir, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("local resolver root %q: %w (create the directory first)", root, err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("local resolver root %q: %w", root, err)
	}
	return &LocalDir{root: r, dir: dir, parallel: DefaultParallelism}, nil
}

// Root is the absolute root directory with symlinks resolved.
func (l *LocalDir) Root() string { return l.dir }

// Close releases the root directory. It is safe to call twice.
func (l *LocalDir) Close() error {
	if err := l.root.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// Resolve reads a whole file.
func (l *LocalDir) Resolve(ctx context.Context, id string) ([]byte, error) {
	f, err := l.open(id)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("resolve %q: %w", id, err)
	}
	return b, nil
}

// ResolveBatch reads files with bounded parallelism, yielding them in order.
func (l *LocalDir) ResolveBatch(ctx context.Context, ids []string) iter.Seq2[File, error] {
	return resolveBatch(ctx, ids, l.parallel, func(ctx context.Context, id string) (File, error) {
		if err := ctx.Err(); err != nil {
			return File{Ref: schemas.FileRef{ID: id}}, err
		}
		b, err := l.Resolve(ctx, id)
		if err != nil {
			return File{Ref: schemas.FileRef{ID: id}}, err
		}
		sum := sha256.Sum256(b)
		ref := l.ref(id, int64(len(b)), b, hex.EncodeToString(sum[:]))
		return File{Ref: ref, Content: b}, nil
	})
}

// ResolveMetadata returns a file's reference: its media type is sniffed and
// its sha256 computed by streaming the file, which is not kept.
func (l *LocalDir) ResolveMetadata(ctx context.Context, id string) (schemas.FileRef, error) {
	f, err := l.open(id)
	if err != nil {
		return schemas.FileRef{}, err
	}
	defer f.Close()
	head := make([]byte, SniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return schemas.FileRef{}, fmt.Errorf("resolve %q: %w", id, err)
	}
	h := sha256.New()
	h.Write(head[:n])
	rest, err := io.Copy(h, f)
	if err != nil {
		return schemas.FileRef{}, fmt.Errorf("resolve %q: %w", id, err)
	}
	return l.ref(id, int64(n)+rest, head[:n], hex.EncodeToString(h.Sum(nil))), nil
}

// Store writes content to a new file under the root and returns its
// reference. The name is metadata[MetaFilename] reduced to a safe base name
// (or a generated ID), inside metadata[MetaFolder] when that is a valid
// relative path; an existing file is never overwritten: a clashing name gets
// a generated prefix.
func (l *LocalDir) Store(ctx context.Context, content io.Reader, mediaType string, metadata map[string]string) (schemas.FileRef, error) {
	dir := ""
	if folder := metadata[MetaFolder]; folder != "" {
		if err := checkLocalID(folder); err != nil {
			return schemas.FileRef{}, fmt.Errorf("store: folder: %w", err)
		}
		dir = path.Clean(folder)
		if err := l.root.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
			return schemas.FileRef{}, fmt.Errorf("store: folder %q: %w", folder, err)
		}
	}
	name := safeFilename(metadata[MetaFilename])
	if name == "" {
		name = NewFileID()
	}
	id := path.Join(dir, name)
	f, err := l.root.OpenFile(filepath.FromSlash(id), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		id = path.Join(dir, NewFileID()+"-"+name)
		f, err = l.root.OpenFile(filepath.FromSlash(id), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return schemas.FileRef{}, fmt.Errorf("store %q: %w", id, err)
	}
	head := make([]byte, SniffLen)
	n, rerr := io.ReadFull(content, head)
	h := sha256.New()
	size, err := io.Copy(io.MultiWriter(f, h), io.MultiReader(bytes.NewReader(head[:n]), content))
	if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
		err = rerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return schemas.FileRef{}, errors.Join(fmt.Errorf("store %q: %w", id, err), l.root.Remove(filepath.FromSlash(id)))
	}
	ref := l.ref(id, size, head[:n], hex.EncodeToString(h.Sum(nil)))
	if mediaType != "" {
		ref.MediaType = mediaType
	}
	return ref, nil
}

func (l *LocalDir) ref(id string, size int64, head []byte, sum string) schemas.FileRef {
	clean := path.Clean(id)
	ref := schemas.FileRef{
		ID:        id,
		Filename:  path.Base(clean),
		MediaType: SniffMediaType(head, clean),
		Size:      size,
		SHA256:    sum,
	}
	if d := path.Dir(clean); d != "." {
		ref.Metadata = map[string]string{MetaFolder: d}
	}
	return ref
}

// open checks id and opens it through the root.
func (l *LocalDir) open(id string) (*os.File, error) {
	p, err := l.path(id)
	if err != nil {
		return nil, err
	}
	rel, _ := filepath.Rel(l.dir, p) // p is inside l.dir
	f, err := l.root.Open(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: %q under %s", ErrNotFound, id, l.dir)
	case err != nil && strings.Contains(err.Error(), "escapes"):
		return nil, fmt.Errorf("%w: %q leaves %s", ErrOutsideRoot, id, l.dir)
	case err != nil:
		return nil, fmt.Errorf("open %q: %w", id, err)
	}
	if st, err := f.Stat(); err != nil || st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%w: %q is a directory, not a file", ErrInvalidID, id)
	}
	return f, nil
}

// path returns the absolute path of id, refusing any id that leaves the
// root. A symlink is followed and must stay inside; a path that does not
// exist yet is returned as joined.
func (l *LocalDir) path(id string) (string, error) {
	if err := checkLocalID(id); err != nil {
		return "", err
	}
	p := filepath.Join(l.dir, filepath.FromSlash(id))
	switch {
	case p == l.dir:
		return "", fmt.Errorf("%w: %q names the root itself, not a file", ErrInvalidID, id)
	case !within(l.dir, p):
		return "", fmt.Errorf("%w: %q does not name a file under %s", ErrOutsideRoot, id, l.dir)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		return "", fmt.Errorf("resolve %q: %w", id, err)
	}
	if !within(l.dir, real) {
		return "", fmt.Errorf("%w: %q is a symlink to %s, outside %s", ErrOutsideRoot, id, real, l.dir)
	}
	return p, nil
}

// within reports whether p is dir or below it.
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// checkLocalID refuses, by its text alone, an ID that is not a clean relative
// path: empty, absolute, with a ".." segment, a backslash, a NUL or control
// byte, or percent-encoding that decodes to any of those.
func checkLocalID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: the id is empty; give a path relative to the root", ErrInvalidID)
	}
	s := id
	for range 4 { // undo up to three layers of percent-encoding
		if err := checkPlainID(id, s); err != nil {
			return err
		}
		if !strings.Contains(s, "%") {
			return nil
		}
		dec := percentDecode(s)
		if dec == s {
			return nil
		}
		s = dec
	}
	return fmt.Errorf("%w: %q is percent-encoded too many times", ErrOutsideRoot, id)
}

func checkPlainID(id, s string) error {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%w: %q contains a NUL byte", ErrOutsideRoot, id)
	case strings.ContainsRune(s, '\\'):
		return fmt.Errorf("%w: %q contains a backslash; separate folders with /", ErrOutsideRoot, id)
	case strings.HasPrefix(s, "/") || filepath.IsAbs(s) || filepath.VolumeName(s) != "":
		return fmt.Errorf("%w: %q is absolute; give a path relative to the root", ErrOutsideRoot, id)
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == ".." {
			return fmt.Errorf("%w: %q has a .. segment", ErrOutsideRoot, id)
		}
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: %q contains a control character", ErrInvalidID, id)
		}
	}
	return nil
}

// percentDecode decodes every valid %XX escape in s and leaves anything else
// as it is, the way a lenient server would.
func percentDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// safeFilename reduces a user-supplied name to one path segment.
func safeFilename(name string) string {
	name = strings.ReplaceAll(name, `\`, "/")
	name = path.Base(name)
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '%' || r == ':' {
			return '_'
		}
		return r
	}, name)
	if name == "." || name == ".." || name == "/" {
		return ""
	}
	return strings.TrimLeft(name, ".")
}
