package resolvers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/benchsuite"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// content returns a reader of n pseudo-random bytes from seed; the same seed
// gives the same bytes, so the expected sha256 is computed by streaming too.
func content(seed uint64, n int64) io.Reader {
	var s [32]byte
	s[0], s[1] = byte(seed), byte(seed>>8)
	return io.LimitReader(rand.NewChaCha8(s), n)
}

func sha256Of(t testing.TB, r io.Reader) (string, int64) {
	t.Helper()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

// heapPeak samples the live heap while running fn and returns the highest
// value seen above the value before fn.
func heapPeak(fn func()) (peak uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if v := read(); v > base && v-base > peak {
				peak = v - base
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	fn()
	close(stop)
	wg.Wait()
	return peak
}

const MiB = 1 << 20

// TestObjectStoreRoundTrip talks to a server in another process, so the heap
// it measures is the client's alone.
func TestObjectStoreRoundTrip(t *testing.T) {
	res := serverProcess(t)
	ctx := testCtx(t)
	store := resolvers.NewObjectStore(res.Files)

	sizes := []int64{0, 1 << 10, 10 * MiB, 100 * MiB}
	if testing.Short() {
		sizes = sizes[:3]
	}
	for i, size := range sizes {
		seed := uint64(i + 1)
		want, _ := sha256Of(t, content(seed, size))
		var ref schemas.FileRef
		putPeak := heapPeak(func() {
			var err error
			ref, err = store.Store(ctx, content(seed, size), "", map[string]string{resolvers.MetaFilename: "blob.bin", resolvers.MetaTags: "a,b"})
			if err != nil {
				t.Fatalf("store %d bytes: %v", size, err)
			}
		})
		if ref.Size != size || ref.SHA256 != want || ref.Filename != "blob.bin" || ref.Metadata[resolvers.MetaTags] != "a,b" || !strings.HasPrefix(ref.ID, "f-") {
			t.Fatalf("stored %d bytes as %+v, want sha256 %s", size, ref, want)
		}
		var got string
		var n int64
		getPeak := heapPeak(func() {
			rc, oref, err := store.Open(ctx, ref.ID)
			if err != nil {
				t.Fatalf("open %s: %v", ref.ID, err)
			}
			got, n = sha256Of(t, rc)
			rc.Close()
			if oref.SHA256 != want {
				t.Errorf("Open's ref sha256 %s, want %s", oref.SHA256, want)
			}
		})
		if got != want || n != size {
			t.Fatalf("read back %d bytes with sha256 %s, want %d bytes %s", n, got, size, want)
		}
		t.Logf("%9d bytes: peak heap above baseline: put %.1f MiB, get %.1f MiB", size, float64(putPeak)/MiB, float64(getPeak)/MiB)
		if size >= 100*MiB && (putPeak > 64*MiB || getPeak > 64*MiB) {
			t.Errorf("100 MiB round trip held too much: put %.1f MiB, get %.1f MiB (limit 64 MiB)", float64(putPeak)/MiB, float64(getPeak)/MiB)
		}
		if size <= 10*MiB {
			b, err := store.Resolve(ctx, ref.ID)
			if err != nil || int64(len(b)) != size {
				t.Fatalf("Resolve %s: %d bytes, %v", ref.ID, len(b), err)
			}
		}
		if err := store.Delete(ctx, ref.ID); err != nil {
			t.Fatal(err)
		}
	}
}

func TestObjectStoreCatalog(t *testing.T) {
	res := bustest.Start(t).Provision(t)
	ctx := testCtx(t)
	store := resolvers.NewObjectStore(res.Files, resolvers.WithParallelism(2))

	png := encodeImage(t, "png")
	img, err := store.Store(ctx, bytes.NewReader(png), "", map[string]string{resolvers.MetaFilename: "sunset.txt", resolvers.MetaFolder: "inbox"})
	if err != nil {
		t.Fatal(err)
	}
	if img.MediaType != "image/png" {
		t.Fatalf("sniffed %q for a PNG named sunset.txt", img.MediaType)
	}
	doc, err := store.Store(ctx, strings.NewReader("hello"), "text/x-custom", nil)
	if err != nil {
		t.Fatal(err)
	}
	if doc.MediaType != "text/x-custom" || doc.Filename != "" {
		t.Fatalf("given media type not kept: %+v", doc)
	}
	// A spilled collection shares the store but is not a file.
	cols := resolvers.NewCollections(res.Files, 8)
	spilled, err := cols.Spill(ctx, schemas.FromIDs("", img.ID, doc.ID))
	if err != nil || !spilled.Spilled() {
		t.Fatalf("spill: %v", err)
	}

	var listed []string
	for ref, err := range store.List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, ref.ID)
	}
	slices.Sort(listed)
	want := []string{img.ID, doc.ID}
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("List = %v, want %v (no collections)", listed, want)
	}
	if _, err := store.Resolve(ctx, spilled.Ref()); !errors.Is(err, resolvers.ErrInvalidID) {
		t.Fatalf("resolving a collection as a file: %v, want ErrInvalidID", err)
	}

	// Move to a folder: metadata changes, content does not.
	before, _ := res.Files.GetInfo(ctx, img.ID)
	moved, err := store.UpdateMetadata(ctx, img.ID, func(m map[string]string) { m[resolvers.MetaFolder] = "sunsets"; m[resolvers.MetaTags] = "sky" })
	if err != nil {
		t.Fatal(err)
	}
	after, _ := res.Files.GetInfo(ctx, img.ID)
	if moved.Metadata[resolvers.MetaFolder] != "sunsets" || moved.Filename != "sunset.txt" || moved.MediaType != "image/png" {
		t.Fatalf("updated ref: %+v", moved)
	}
	if after.NUID != before.NUID || after.Digest != before.Digest {
		t.Fatalf("content rewritten: nuid %s -> %s", before.NUID, after.NUID)
	}
	meta, err := store.ResolveMetadata(ctx, img.ID)
	if err != nil || meta.Metadata[resolvers.MetaFolder] != "sunsets" || meta.Metadata[resolvers.MetaTags] != "sky" || meta.SHA256 != img.SHA256 {
		t.Fatalf("metadata after update: %+v, %v", meta, err)
	}
	if b, err := store.Resolve(ctx, img.ID); err != nil || !bytes.Equal(b, png) {
		t.Fatalf("content after update: %d bytes, %v", len(b), err)
	}

	// Batch: in order, a missing one yields its error and the rest go on.
	ids := []string{doc.ID, "f-missing", img.ID, doc.ID}
	var got []string
	for f, err := range store.ResolveBatch(ctx, ids) {
		switch {
		case errors.Is(err, resolvers.ErrNotFound):
			got = append(got, "missing:"+f.Ref.ID)
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, f.Ref.ID+":"+string(f.Content[:min(5, len(f.Content))]))
		}
	}
	wantBatch := []string{doc.ID + ":hello", "missing:f-missing", img.ID + ":" + string(png[:5]), doc.ID + ":hello"}
	if !slices.Equal(got, wantBatch) {
		t.Fatalf("batch = %q, want %q", got, wantBatch)
	}
	for range store.ResolveBatch(ctx, ids) {
		break // stopping early must not hang or leak
	}

	// Missing files.
	for name, call := range map[string]func() error{
		"Resolve":         func() error { _, err := store.Resolve(ctx, "f-nope"); return err },
		"Open":            func() error { _, _, err := store.Open(ctx, "f-nope"); return err },
		"ResolveMetadata": func() error { _, err := store.ResolveMetadata(ctx, "f-nope"); return err },
		"UpdateMetadata":  func() error { _, err := store.UpdateMetadata(ctx, "f-nope", func(map[string]string) {}); return err },
		"Delete":          func() error { return store.Delete(ctx, "f-nope") },
	} {
		if err := call(); !errors.Is(err, resolvers.ErrNotFound) || !strings.Contains(err.Error(), `"f-nope"`) {
			t.Errorf("%s of a missing file: %v, want ErrNotFound naming the id", name, err)
		}
	}
	if err := store.Delete(ctx, doc.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Resolve(ctx, doc.ID); !errors.Is(err, resolvers.ErrNotFound) {
		t.Fatalf("resolve after delete: %v", err)
	}
	if err := store.Delete(ctx, doc.ID); !errors.Is(err, resolvers.ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
}

func TestNewFileID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := resolvers.NewFileID()
		if len(id) != 22 || !strings.HasPrefix(id, "f-") || strings.ContainsAny(id, ".*> \t") || strings.ToLower(id) != id {
			t.Fatalf("bad id %q", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

// BenchmarkObjectStore compares the resolver's Store/Open with plain nats.go
// Put/Get on the same bucket for 1 MiB and 16 MiB files (MB/s per line).
func BenchmarkObjectStore(b *testing.B) {
	srv := bustest.Start(b)
	env := benchsuite.Env{NC: srv.Conn(b), JS: srv.JetStream(b), Names: srv.Names(), Res: srv.Provision(b)}
	for _, size := range []int{1 << 20, 16 << 20} {
		for _, p := range benchsuite.ObjectStore(context.Background(), env, size) {
			b.Run(p.Name+"/agentmesh", p.Mesh)
			b.Run(p.Name+"/raw-natsgo", p.Baseline)
		}
	}
}
