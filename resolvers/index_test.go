package resolvers_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

type tagsKey struct{}

// derivedTags runs Derive over every file of store, counting the builds.
func derivedTags(t *testing.T, store resolvers.Catalog, builds *int) map[string]string {
	t.Helper()
	out := map[string]string{}
	for f, err := range resolvers.Files(context.Background(), store) {
		if err != nil {
			t.Fatal(err)
		}
		out[f.Ref.ID] = resolvers.Derive(f, tagsKey{}, func(ref schemas.FileRef) string {
			*builds++
			return ref.Metadata[resolvers.MetaTags]
		})
	}
	return out
}

// What Derive builds from an indexed file is built once per version of the
// file: reading again builds nothing, a change by another process builds
// the changed file's again, with the new metadata. Without an index every
// read builds.
func TestIndexDerivesOncePerVersion(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	files := bustest.Start(t).Provision(t).Files
	writer := resolvers.NewObjectStore(files)
	var ids []string
	for _, tags := range []string{"sea", "forest"} {
		ref, err := writer.Store(ctx, bytes.NewReader([]byte(tags)), "text/plain", map[string]string{resolvers.MetaTags: tags})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
	}
	indexed := resolvers.NewObjectStore(files)
	if err := indexed.Index(ctx); err != nil {
		t.Fatal(err)
	}
	builds := 0
	if got := derivedTags(t, indexed, &builds); got[ids[0]] != "sea" || got[ids[1]] != "forest" || builds != 2 {
		t.Fatalf("first read: %v, %d builds; want both files' tags, 2 builds", got, builds)
	}
	derivedTags(t, indexed, &builds)
	if builds != 2 {
		t.Fatalf("second read of unchanged files built %d more times; want none", builds-2)
	}
	if _, err := writer.UpdateMetadata(ctx, ids[0], func(m map[string]string) { m[resolvers.MetaTags] = "harbour" }); err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	var rebuilt int
	if !fixture.Within(fixture.WaitTimeout, func() bool {
		before := builds
		got = derivedTags(t, indexed, &builds)
		rebuilt = builds - before
		return got[ids[0]] == "harbour"
	}) {
		t.Fatalf("after %s the index still derives %q from the changed file", fixture.WaitTimeout, got[ids[0]])
	}
	if rebuilt != 1 || got[ids[1]] != "forest" {
		t.Fatalf("after a change: %v with %d builds; want only the changed file built again", got, rebuilt)
	}
	builds = 0
	derivedTags(t, writer, &builds)
	derivedTags(t, writer, &builds)
	if builds != 4 {
		t.Errorf("without an index: %d builds for two reads of two files; want 4", builds)
	}
}

// CatchUp makes an index hold what another process stored a moment ago,
// without waiting for the watch: what a search that found nothing asks for.
func TestIndexCatchUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	files := bustest.Start(t).Provision(t).Files
	indexed := resolvers.NewObjectStore(files)
	if err := indexed.Index(ctx); err != nil {
		t.Fatal(err)
	}
	writer := resolvers.NewObjectStore(files)
	var want []string
	for i := range 20 {
		ref, err := writer.Store(ctx, bytes.NewReader([]byte{byte(i)}), "image/png", map[string]string{resolvers.MetaTags: "sunset"})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ref.ID)
	}
	if err := resolvers.CatchUp(ctx, indexed); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for ref, err := range indexed.List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		have[ref.ID] = true
	}
	for _, id := range want {
		if !have[id] {
			t.Errorf("after CatchUp the index lacks %s, stored before it", id)
		}
	}
	// A catalog without an index has nothing to catch up.
	if err := resolvers.CatchUp(ctx, writer); err != nil {
		t.Errorf("CatchUp of a store without an index: %v", err)
	}
}
