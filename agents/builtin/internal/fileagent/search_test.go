package fileagent_test

import (
	"slices"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
	"github.com/agentmesh/agentmesh/schemas"
)

func hit(name string, score float64) fileagent.Hit {
	return fileagent.Hit{Ref: schemas.FileRef{ID: "id-" + name, Filename: name}, Score: score}
}

func names(hits []fileagent.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Ref.Filename)
	}
	return out
}

func TestRank(t *testing.T) {
	hits := []fileagent.Hit{hit("c.jpg", 2), hit("a.jpg", 0), hit("b.jpg", 2), hit("d.jpg", 5)}
	tests := []struct {
		name   string
		search fileagent.Search
		want   []string
	}{
		{"matches best first, ties by name", fileagent.Search{Terms: []string{"x"}, Limit: 10}, []string{"d.jpg", "b.jpg", "c.jpg"}},
		{"limit", fileagent.Search{Terms: []string{"x"}, Limit: 2}, []string{"d.jpg", "b.jpg"}},
		{"no terms keeps every hit", fileagent.Search{Limit: 10}, []string{"d.jpg", "b.jpg", "c.jpg", "a.jpg"}},
	}
	for _, tt := range tests {
		if got := names(tt.search.Rank(slices.Clone(hits))); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v; want %v", tt.name, got, tt.want)
		}
	}
}

func TestFound(t *testing.T) {
	many := []fileagent.Hit{hit("a", 1), hit("b", 1), hit("c", 1), hit("d", 1), hit("e", 1), hit("f", 1)}
	tests := []struct {
		search fileagent.Search
		hits   []fileagent.Hit
		want   string
	}{
		{fileagent.Search{Query: "sunset", Terms: []string{"sunset"}}, many[:2], `found 2 images for "sunset": a, b`},
		{fileagent.Search{Query: "sunset", Terms: []string{"sunset"}}, many, `found 6 images for "sunset": a, b, c, d, e, ...`},
		{fileagent.Search{Query: "the"}, nil, `found 0 images (the query "the" has no search words, so every image is listed)`},
		{fileagent.Search{}, many[:1], `found 1 image (no query, so every image is listed): a`},
	}
	for _, tt := range tests {
		summary, outputs := fileagent.Start(contract).Found(tt.search, tt.hits)
		if summary != tt.want {
			t.Errorf("summary %q; want %q", summary, tt.want)
		}
		fc, err := outputs["images"].Files()
		if err != nil || fc.Count() != len(tt.hits) || fc.ContentType() != schemas.ContentImages {
			t.Errorf("output %+v, %v; want the %d ids as images", fc, err, len(tt.hits))
		}
	}
}

func TestCountList(t *testing.T) {
	got := fileagent.CountList(map[string][]string{"sunset": {"a", "b"}, "forest": {"c"}})
	if got != "forest 1, sunset 2" {
		t.Errorf("CountList = %q", got)
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc"},
		{"été", 2, "é"}, // é is two bytes
		{"été", 1, ""},
		{"abc", 0, ""},
	}
	for _, tt := range tests {
		if got := fileagent.Cut(tt.s, tt.n); got != tt.want {
			t.Errorf("Cut(%q, %d) = %q; want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

// A query param given empty lists every file; without one, the
// instruction is the query.
func TestSearchQuery(t *testing.T) {
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"query": ""}, ""},
		{map[string]any{"query": " sunset "}, "sunset"},
		{map[string]any{}, "summarize the documents"},
		{nil, "summarize the documents"},
	} {
		ec := schemas.ContextFromTask(nil, schemas.TaskRequest{Params: tc.params, Instruction: "summarize the documents"})
		s, err := fileagent.Start(contract).Search(ec, 10)
		if err != nil || s.Query != tc.want {
			t.Errorf("params %v: query %q (%v), want %q", tc.params, s.Query, err, tc.want)
		}
	}
}
