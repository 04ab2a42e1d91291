package resolvers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func manyIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("f-%020d", i)
	}
	return ids
}

// countCollections returns how many objects live under collections/.
func countCollections(t *testing.T, obs jetstream.ObjectStore) int {
	t.Helper()
	infos, err := obs.List(testCtx(t))
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, info := range infos {
		if strings.HasPrefix(info.Name, resolvers.CollectionPrefix) {
			n++
		}
	}
	return n
}

func TestCollectionsSpillAndResolve100k(t *testing.T) {
	res := bustest.Start(t).Provision(t)
	ctx := testCtx(t)
	cols := resolvers.NewCollections(res.Files, 0)
	if cols.Threshold() != resolvers.DefaultSpillThreshold {
		t.Fatalf("threshold 0 gave %d, want the default %d", cols.Threshold(), resolvers.DefaultSpillThreshold)
	}

	ids := manyIDs(100_000)
	fc := schemas.FromIDs(schemas.ContentImages, ids...).WithSource("SEARCH")
	spilled, err := cols.Spill(ctx, fc)
	if err != nil {
		t.Fatal(err)
	}
	if !spilled.Spilled() || spilled.Count() != 100_000 || spilled.ContentType() != schemas.ContentImages || spilled.SourceCapability() != "SEARCH" {
		t.Fatalf("spilled = ref %q count %d type %q source %q", spilled.Ref(), spilled.Count(), spilled.ContentType(), spilled.SourceCapability())
	}
	if !strings.HasPrefix(spilled.Ref(), "collections/") || len(spilled.Ref()) != len("collections/")+64 {
		t.Fatalf("ref %q is not collections/<sha256>", spilled.Ref())
	}
	raw, _ := spilled.MarshalJSON()
	if len(raw) > 1024 {
		t.Fatalf("spilled collection still %d bytes on the wire", len(raw))
	}

	back, err := cols.Resolve(ctx, spilled)
	if err != nil {
		t.Fatal(err)
	}
	got := back.IDs()
	if len(got) != len(ids) {
		t.Fatalf("resolved %d ids, want %d", len(got), len(ids))
	}
	for i := range ids {
		if got[i] != ids[i] {
			t.Fatalf("ids[%d] = %q, want %q", i, got[i], ids[i])
		}
	}
	if back.Spilled() || back.ContentType() != schemas.ContentImages || back.SourceCapability() != "SEARCH" {
		t.Fatalf("resolved collection lost its attributes: spilled %v type %q source %q", back.Spilled(), back.ContentType(), back.SourceCapability())
	}

	// Same collection again: same ref, stored once.
	again, err := cols.Spill(ctx, schemas.FromIDs(schemas.ContentImages, ids...))
	if err != nil {
		t.Fatal(err)
	}
	if again.Ref() != spilled.Ref() {
		t.Fatalf("same ids spilled to %q and %q", spilled.Ref(), again.Ref())
	}
	if n := countCollections(t, res.Files); n != 1 {
		t.Fatalf("%d collections stored, want 1", n)
	}
	// Another order is another collection.
	rev := append([]string(nil), ids...)
	rev[0], rev[1] = rev[1], rev[0]
	other, err := cols.Spill(ctx, schemas.FromIDs(schemas.ContentImages, rev...))
	if err != nil {
		t.Fatal(err)
	}
	if other.Ref() == spilled.Ref() {
		t.Fatal("a different order spilled to the same ref")
	}
}

func TestCollectionsSmallUntouched(t *testing.T) {
	res := bustest.Start(t).Provision(t)
	ctx := testCtx(t)
	cols := resolvers.NewCollections(res.Files, 0)
	fc := schemas.FromIDs(schemas.ContentDocuments, manyIDs(100)...)
	out, err := cols.Spill(ctx, fc)
	if err != nil {
		t.Fatal(err)
	}
	if out.Spilled() || out.Count() != 100 {
		t.Fatalf("small collection spilled: %q count %d", out.Ref(), out.Count())
	}
	if n := countCollections(t, res.Files); n != 0 {
		t.Fatalf("%d collections stored for a small one", n)
	}
	same, err := cols.Resolve(ctx, out)
	if err != nil || same.Count() != 100 {
		t.Fatalf("resolve of a plain collection: %v, count %d", err, same.Count())
	}
}

func TestCollectionsThresholdBoundary(t *testing.T) {
	res := bustest.Start(t).Provision(t)
	ctx := testCtx(t)
	// ["a","b"] is 9 bytes.
	fc := schemas.FromIDs("", "a", "b")
	if out, err := resolvers.NewCollections(res.Files, 9).Spill(ctx, fc); err != nil || out.Spilled() {
		t.Fatalf("9 bytes at threshold 9: spilled %v, err %v", out.Spilled(), err)
	}
	out, err := resolvers.NewCollections(res.Files, 8).Spill(ctx, fc)
	if err != nil || !out.Spilled() {
		t.Fatalf("9 bytes at threshold 8: spilled %v, err %v", out.Spilled(), err)
	}
	// Escapes count: "\u003c" is longer than "<".
	esc := schemas.FromIDs("", "<<<<")
	if out, err := resolvers.NewCollections(res.Files, 10).Spill(ctx, esc); err != nil || !out.Spilled() {
		t.Fatalf("escaped ids at threshold 10: spilled %v, err %v", out.Spilled(), err)
	}
}

func TestCollectionsResolveErrors(t *testing.T) {
	res := bustest.Start(t).Provision(t)
	ctx := testCtx(t)
	cols := resolvers.NewCollections(res.Files, 8)

	missing := schemas.SpilledCollection("collections/"+strings.Repeat("0", 64), 3, "")
	_, err := cols.Resolve(ctx, missing)
	if !errors.Is(err, resolvers.ErrNotFound) || !strings.Contains(err.Error(), missing.Ref()) {
		t.Fatalf("missing collection: %v, want ErrNotFound naming %q", err, missing.Ref())
	}

	spilled, err := cols.Spill(ctx, schemas.FromIDs("", "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	wrong := schemas.SpilledCollection(spilled.Ref(), 4, "")
	if _, err := cols.Resolve(ctx, wrong); !errors.Is(err, resolvers.ErrCorruptCollection) || !strings.Contains(err.Error(), "4") {
		t.Fatalf("count mismatch: %v, want ErrCorruptCollection", err)
	}

	if _, err := res.Files.PutString(ctx, "collections/bad", `{"not":"an array"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := cols.Resolve(ctx, schemas.SpilledCollection("collections/bad", 1, "")); !errors.Is(err, resolvers.ErrCorruptCollection) {
		t.Fatalf("not an array: %v, want ErrCorruptCollection", err)
	}

	if _, err := cols.Resolve(ctx, schemas.SpilledCollection("f-somefile", 1, "")); !errors.Is(err, resolvers.ErrInvalidID) {
		t.Fatalf("ref outside collections/: %v, want ErrInvalidID", err)
	}
}

func TestCollectionsValues(t *testing.T) {
	res := bustest.Start(t).Provision(t)
	ctx := testCtx(t)
	cols := resolvers.NewCollections(res.Files, 1024)

	text := schemas.TextValue("hello", "GENERATION")
	if out, err := cols.SpillValue(ctx, text); err != nil || string(out.Value) != string(text.Value) {
		t.Fatalf("TEXT through SpillValue: %s, %v", out.Value, err)
	}
	if out, err := cols.ResolveValue(ctx, text); err != nil || string(out.Value) != string(text.Value) {
		t.Fatalf("TEXT through ResolveValue: %s, %v", out.Value, err)
	}

	ids := manyIDs(1000)
	tv := schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, ids...).WithSource("SEARCH"), "search-agent")
	spilled, err := cols.SpillValue(ctx, tv)
	if err != nil {
		t.Fatal(err)
	}
	if spilled.Source != tv.Source || !spilled.ProducedAt.Equal(tv.ProducedAt) || spilled.ContentTypeHint != schemas.ContentImages {
		t.Fatalf("SpillValue changed the envelope: %+v", spilled)
	}
	if len(spilled.Value) > 512 || !strings.Contains(string(spilled.Value), "collection_ref") {
		t.Fatalf("spilled value: %s", spilled.Value)
	}
	back, err := cols.ResolveValue(ctx, spilled)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := back.Files()
	if err != nil {
		t.Fatal(err)
	}
	if fc.Count() != 1000 || fc.IDs()[999] != ids[999] || fc.SourceCapability() != "SEARCH" {
		t.Fatalf("resolved value: count %d source %q", fc.Count(), fc.SourceCapability())
	}
}
