package resolvers_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/resolvers"
)

func newLocalDir(t testing.TB) (*resolvers.LocalDir, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "a.txt"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "secret.txt"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(root, "out-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base, filepath.Join(root, "out-dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/a.txt", filepath.Join(root, "in-link")); err != nil {
		t.Fatal(err)
	}
	l, err := resolvers.NewLocalDir(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, root
}

func TestLocalDirRefusesTraversal(t *testing.T) {
	l, _ := newLocalDir(t)
	ctx := testCtx(t)
	for _, id := range []string{
		"../x",
		"../root/sub/a.txt",
		"a/../../x",
		"sub/../../secret.txt",
		"/etc/passwd",
		"out-link",            // symlink to a file outside the root
		"out-dir/secret.txt",  // through a symlinked directory outside
		"..%2fx",              // encoded slash
		"..%2Fsecret.txt",     // upper-case escape
		"%2e%2e/x",            // encoded dots
		"%2E%2E%2Fsecret.txt", // fully encoded
		"%252e%252e%252fx",    // double-encoded
		"%2fetc/passwd",       // encoded absolute path
		`..\x`,                // backslash
		`sub\..\..\x`,         // backslash traversal
		"sub/a.txt\x00.jpg",   // NUL byte
		"%00x",                // encoded NUL
	} {
		t.Run(id, func(t *testing.T) {
			_, err := l.Resolve(ctx, id)
			if !errors.Is(err, resolvers.ErrOutsideRoot) {
				t.Fatalf("Resolve(%q) = %v, want ErrOutsideRoot", id, err)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", id)) {
				t.Errorf("error %q does not name the id %q", err, id)
			}
			if _, err := l.ResolveMetadata(ctx, id); !errors.Is(err, resolvers.ErrOutsideRoot) {
				t.Errorf("ResolveMetadata(%q) = %v, want ErrOutsideRoot", id, err)
			}
		})
	}
}

func TestLocalDirResolve(t *testing.T) {
	l, root := newLocalDir(t)
	ctx := testCtx(t)

	b, err := l.Resolve(ctx, "sub/a.txt")
	if err != nil || string(b) != "inside" {
		t.Fatalf("Resolve(sub/a.txt) = %q, %v", b, err)
	}
	if b, err := l.Resolve(ctx, "in-link"); err != nil || string(b) != "inside" {
		t.Fatalf("symlink inside the root: %q, %v", b, err)
	}
	// '%' is an ordinary character once the ID cannot decode to traversal.
	if _, err := l.Resolve(ctx, "sub%2Fa.txt"); !errors.Is(err, resolvers.ErrNotFound) {
		t.Fatalf("sub%%2Fa.txt is a literal name: %v, want ErrNotFound", err)
	}
	if err := os.WriteFile(filepath.Join(root, "100%.txt"), []byte("pct"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := l.Resolve(ctx, "100%.txt"); err != nil || string(b) != "pct" {
		t.Fatalf("100%%.txt: %q, %v", b, err)
	}
	_, err = l.Resolve(ctx, "sub/missing.txt")
	if !errors.Is(err, resolvers.ErrNotFound) || !strings.Contains(err.Error(), "sub/missing.txt") {
		t.Fatalf("missing file: %v, want ErrNotFound naming it", err)
	}
	if _, err := l.Resolve(ctx, "sub"); !errors.Is(err, resolvers.ErrInvalidID) {
		t.Fatalf("directory: %v, want ErrInvalidID", err)
	}
	if _, err := l.Resolve(ctx, ""); !errors.Is(err, resolvers.ErrInvalidID) {
		t.Fatalf("empty id: %v, want ErrInvalidID", err)
	}

	ref, err := l.ResolveMetadata(ctx, "sub/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	// sha256("inside")
	if ref.Size != 6 || ref.Filename != "a.txt" || !strings.HasPrefix(ref.MediaType, "text/plain") || ref.Metadata[resolvers.MetaFolder] != "sub" || len(ref.SHA256) != 64 {
		t.Fatalf("metadata: %+v", ref)
	}

	png := encodeImage(t, "png")
	stored, err := l.Store(ctx, bytes.NewReader(png), "", map[string]string{resolvers.MetaFilename: "../../evil.txt", resolvers.MetaFolder: "pics/2024"})
	if err != nil {
		t.Fatal(err)
	}
	if stored.ID != "pics/2024/evil.txt" || stored.MediaType != "image/png" || stored.Size != int64(len(png)) {
		t.Fatalf("stored: %+v", stored)
	}
	if _, err := os.Stat(filepath.Join(root, "pics", "2024", "evil.txt")); err != nil {
		t.Fatalf("stored file not under the root: %v", err)
	}
	again, err := l.Store(ctx, strings.NewReader("x"), "text/plain", map[string]string{resolvers.MetaFilename: "evil.txt", resolvers.MetaFolder: "pics/2024"})
	if err != nil || again.ID == stored.ID {
		t.Fatalf("second store with the same name: %+v, %v (must not overwrite)", again, err)
	}
	if _, err := l.Store(ctx, strings.NewReader("x"), "", map[string]string{resolvers.MetaFolder: "../up"}); !errors.Is(err, resolvers.ErrOutsideRoot) {
		t.Fatalf("store into ../up: %v, want ErrOutsideRoot", err)
	}
	gen, err := l.Store(ctx, strings.NewReader("x"), "", nil)
	if err != nil || !strings.HasPrefix(gen.ID, "f-") {
		t.Fatalf("store without a name: %+v, %v", gen, err)
	}

	var got []string
	for f, err := range l.ResolveBatch(ctx, []string{"sub/a.txt", "nope", stored.ID}) {
		if err != nil {
			got = append(got, "err:"+f.Ref.ID)
			continue
		}
		got = append(got, f.Ref.ID)
	}
	if strings.Join(got, ",") != "sub/a.txt,err:nope,"+stored.ID {
		t.Fatalf("batch order: %v", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func FuzzLocalDirID(f *testing.F) {
	for _, seed := range []string{"sub/a.txt", "../x", "a/../../x", "/etc/passwd", "out-link", "..%2fx", "%2e%2e/x", `..\x`, "a\x00b", "%252e%252e/x", "./sub//a.txt", "in-link", "out-dir/secret.txt"} {
		f.Add(seed)
	}
	l, _ := newLocalDir(f)
	root := l.Root()
	f.Fuzz(func(t *testing.T, id string) {
		p, err := resolvers.LocalPath(l, id)
		if err != nil {
			return
		}
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			t.Fatalf("id %q accepted as %q, outside %q", id, p, root)
		}
		if real, err := filepath.EvalSymlinks(p); err == nil && !strings.HasPrefix(real, root+string(filepath.Separator)) {
			t.Fatalf("id %q accepted as %q, a link to %q outside %q", id, p, real, root)
		}
	})
}
