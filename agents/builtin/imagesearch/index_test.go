package imagesearch_test

import (
	"bytes"
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/imagesearch"
	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// With an indexed store the agent answers from the index: the same images
// as a listing finds, an image another process puts after the agent started
// is found, and a deleted one is not.
func TestIndexedStoreSeesPutsAndDeletes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	files := bustest.Start(t).Provision(t).Files
	writer := resolvers.NewObjectStore(files) // another process's view
	img := samples.Images()[0]
	if _, err := writer.Store(ctx, bytes.NewReader(img.Content), img.MediaType, map[string]string{"filename": "kestrel.jpg"}); err != nil {
		t.Fatal(err)
	}

	indexed := resolvers.NewObjectStore(files)
	if err := indexed.Index(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := imagesearch.New(indexed)
	if err != nil {
		t.Fatal(err)
	}
	listing, err := imagesearch.New(writer)
	if err != nil {
		t.Fatal(err)
	}
	query := map[string]any{"query": "kestrel"}
	_, fromIndex := run(t, a, query)
	_, fromList := run(t, listing, query)
	if len(fromIndex) != 1 || !slices.Equal(fromIndex, fromList) {
		t.Fatalf("indexed search found %v, listing found %v", fromIndex, fromList)
	}

	ref, err := writer.Store(ctx, bytes.NewReader(img.Content), img.MediaType, map[string]string{"filename": "pelican.jpg"})
	if err != nil {
		t.Fatal(err)
	}
	after := map[string]any{"query": "pelican"}
	fixture.Eventually(t, "the image put after the agent started is not found", func() bool {
		_, got := run(t, a, after)
		return slices.Equal(got, []string{ref.ID})
	})

	// A changed tag is searched by its new value, not the one the
	// index weighed the file's terms with before.
	if _, got := run(t, a, map[string]any{"query": "estuary"}); len(got) != 0 {
		t.Fatalf("found %v by a tag no image has yet", got)
	}
	if _, err := writer.UpdateMetadata(ctx, ref.ID, func(m map[string]string) { m[resolvers.MetaTags] = "estuary" }); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "the image is not found by the tag another process gave it", func() bool {
		_, got := run(t, a, map[string]any{"query": "estuary"})
		return slices.Equal(got, []string{ref.ID})
	})

	if err := writer.Delete(ctx, ref.ID); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "the deleted image is still found", func() bool {
		res, got := run(t, a, after)
		return res.Success && len(got) == 0
	})

	// Once the index's context ends, List asks the store again.
	cancel()
	if _, err := writer.Store(context.Background(), bytes.NewReader(img.Content), img.MediaType, map[string]string{"filename": "heron.jpg"}); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "after the index stopped, a new image is not found", func() bool {
		_, got := run(t, a, map[string]any{"query": "heron"})
		return len(got) == 1
	})
}

// The inverted index, and the scan of a store without one, answer as
// scoring every image and ranking would: same images, same order, for one
// term, several, repeated and unknown terms, with ties on score and name.
func TestIndexedSearchRanksAsScoring(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	files := bustest.Start(t).Provision(t).Files
	store := resolvers.NewObjectStore(files)
	words := []string{"sunset", "sea", "forest", "night", "snow", "harbour"}
	rng := rand.New(rand.NewPCG(5, 6))
	var refs []schemas.FileRef
	for i := range 60 {
		meta := map[string]string{
			"filename":                    words[rng.IntN(3)] + ".png", // many equal names
			resolvers.MetaTags:            words[rng.IntN(len(words))],
			resolvers.MetaFolder:          words[rng.IntN(len(words))],
			"caption":                     words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))],
			imagesearch.MetaVisualVersion: imagesearch.VisualVersion,
			imagesearch.MetaVisual:        words[rng.IntN(len(words))],
		}
		ref, err := store.Store(ctx, bytes.NewReader([]byte{byte(i)}), "image/png", meta)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	if err := store.Index(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := imagesearch.New(store)
	if err != nil {
		t.Fatal(err)
	}
	// Without an index the agent scans every image: the same answers.
	scanning, err := imagesearch.New(resolvers.NewObjectStore(files))
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(refs, func(x, y schemas.FileRef) int { return strings.Compare(x.ID, y.ID) })
	for _, q := range []string{"sunset", "sea", "harbour", "zebra", "sunset sea", "forest night snow", "sea sea", "sunsets harbour"} {
		for _, limit := range []int{1, 5, 50} {
			terms := fileagent.Terms(q)
			type scored struct {
				id, name string
				score    float64
			}
			var want []scored
			for _, ref := range refs {
				if s := imagesearch.Score(terms, ref, ref.Metadata[imagesearch.MetaVisual]); s > 0 {
					want = append(want, scored{ref.ID, fileagent.DisplayName(ref), s})
				}
			}
			slices.SortStableFunc(want, func(x, y scored) int {
				if x.score != y.score {
					return cmp.Compare(y.score, x.score)
				}
				return strings.Compare(x.name, y.name)
			})
			var wantIDs []string
			for _, w := range want[:min(limit, len(want))] {
				wantIDs = append(wantIDs, w.id)
			}
			_, got := run(t, a, map[string]any{"query": q, "limit": limit})
			if !slices.Equal(got, wantIDs) {
				t.Errorf("query %q limit %d: got %v; want %v", q, limit, got, wantIDs)
			}
			if _, scanned := run(t, scanning, map[string]any{"query": q, "limit": limit}); !slices.Equal(scanned, wantIDs) {
				t.Errorf("query %q limit %d, scanning: got %v; want %v", q, limit, scanned, wantIDs)
			}
		}
	}
}
