package resolvers_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/resolvers"
)

func TestMatchesKind(t *testing.T) {
	for _, c := range []struct {
		mediaType, kind string
		want            bool
	}{
		{"image/png", "images", true},
		{"text/plain; charset=utf-8", "documents", true},
		{"text/uri-list", "links", true},
		{"text/uri-list", "documents", false},
		{"image/png", "documents", false},
		{"Image/PNG", "image/png", true},
		{"text/markdown", "text/", true},
		{"application/pdf", "text/", false},
	} {
		if got := resolvers.MatchesKind(c.mediaType, c.kind); got != c.want {
			t.Errorf("MatchesKind(%q, %q) = %v, want %v", c.mediaType, c.kind, got, c.want)
		}
	}
}

// Select keeps the files of a folder and kind, sorted by folder, name and
// id, and answers an empty list (not nil) when none match.
func TestObjectStoreSelect(t *testing.T) {
	res := bustest.Start(t).Provision(t)
	ctx := testCtx(t)
	store := resolvers.NewObjectStore(res.Files)
	for _, f := range []struct{ name, folder, mediaType string }{
		{"b.txt", "inbox", "text/plain"},
		{"a.png", "inbox", "image/png"},
		{"c.txt", "archive", "text/plain"},
		{"a.txt", "inbox", "text/plain"},
	} {
		meta := map[string]string{resolvers.MetaFilename: f.name, resolvers.MetaFolder: f.folder}
		if _, err := store.Store(ctx, strings.NewReader("x"), f.mediaType, meta); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		folder, kind string
		want         []string
	}{
		{"", "", []string{"c.txt", "a.png", "a.txt", "b.txt"}},
		{"inbox", "", []string{"a.png", "a.txt", "b.txt"}},
		{"inbox", "documents", []string{"a.txt", "b.txt"}},
		{"", "image/", []string{"a.png"}},
		{"outbox", "", []string{}},
	} {
		refs, err := store.Select(ctx, c.folder, c.kind)
		if err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for _, r := range refs {
			got = append(got, r.Filename)
		}
		if refs == nil || !slices.Equal(got, c.want) {
			t.Errorf("Select(%q, %q) = %q (nil: %v), want %q", c.folder, c.kind, got, refs == nil, c.want)
		}
	}
}
