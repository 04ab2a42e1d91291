package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// Every data type has a readable view; file names come from the object
// store where it knows the id, and what is left out is counted and said.
func TestViewsShowOutputs(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	ctx := context.Background()
	store := resolvers.NewObjectStore(res.Files)
	ref, err := store.Store(ctx, strings.NewReader("sky"), "image/jpeg", map[string]string{resolvers.MetaFilename: "sunset.jpg"})
	if err != nil {
		t.Fatal(err)
	}
	v := newViewer(ctx, &mesh{Res: res})
	must := func(typ string, val any) schemas.TypedValue {
		tv, err := schemas.NewValue(typ, val, "Agent")
		if err != nil {
			t.Fatal(err)
		}
		return tv
	}
	long := strings.Repeat("word ", textLimit)
	cases := []struct {
		name  string
		value schemas.TypedValue
		lines []string
	}{
		{"short text", schemas.TextValue("HELLO", "TextAgent"), []string{`short text (TEXT): "HELLO" · from TextAgent`}},
		{"multi-line text", schemas.TextValue("line one\nline two", "S"), []string{"multi-line text (TEXT): 17 characters", "│ line one", "│ line two"}},
		{"long text", schemas.TextValue(long, "S"), []string{"long text (TEXT): 20000 characters", "│ word word", "(clipped;"}},
		{"one image", schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, ref.ID), "S"), []string{"one image (FILE_IDS/images): 1 image", "- sunset.jpg"}},
		{"many files", schemas.FilesValue(schemas.FromIDs(schemas.ContentMixed, "a", "b", "c", "d", "e", "f", "g"), "S"), []string{"7 files", "- a", "- e", "(clipped;"}},
		{"categories", must(schemas.TypeCategorization, schemas.Categorization{Categories: map[string][]string{"sky": {ref.ID, "x"}, "sea": {"y"}}}),
			[]string{"categories (CATEGORIZATION): 2 categories, 3 files", "├── sea (1 file)", "│   └── y", "└── sky (2 files)", "    ├── sunset.jpg", "    └── x"}},
		{"one category", must(schemas.TypeCategorization, schemas.Categorization{Categories: map[string][]string{"sky": {"x"}}}), []string{"1 category, 1 file"}},
		{"folders", must(schemas.TypeFolderResult, schemas.FolderResult{Folders: map[string][]string{"beach": {"1", "2", "3", "4", "5", "6"}}, Moved: 6}),
			[]string{"1 folder, 6 files", "└── beach/ (6 files)", "    ├── 5", "    └── … 1 more"}},
		{"analysis", must(schemas.TypeAnalysisResult, schemas.AnalysisResult{Items: []schemas.AnalysisItem{{ID: ref.ID, Labels: []string{"sky", "warm"}}}}),
			[]string{"1 item", "- sunset.jpg: sky, warm"}},
		{"links", must(schemas.TypeCrossRef, schemas.CrossRef{Links: []schemas.CrossLink{{From: "a", To: "b", Relation: "cites"}}}), []string{"1 link", "- a -cites-> b"}},
		{"custom type", schemas.TypedValue{DataType: "SCORE", Value: json.RawMessage(`{"score":0.9}`)}, []string{`custom type (SCORE): 1 value: {"score":0.9}`}},
		{"broken value", schemas.TypedValue{DataType: schemas.TypeText, Value: json.RawMessage(`5`)}, []string{"broken value (TEXT): cannot be read"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			printViews(&b, "", v.views(map[string]schemas.TypedValue{c.name: c.value}))
			for _, l := range c.lines {
				if !strings.Contains(b.String(), l) {
					t.Errorf("output lacks %q:\n%s", l, &b)
				}
			}
		})
	}

	// JSON: the same view, with the clipping said and the whole length.
	vv := v.view("t", schemas.TextValue(long, "S"))
	if !vv.Clipped || vv.Length != 5*textLimit || len([]rune(vv.Text)) != textLimit {
		t.Errorf("long text view: clipped %v, length %d, %d characters shown", vv.Clipped, vv.Length, len([]rune(vv.Text)))
	}
}
