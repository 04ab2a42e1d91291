package fileagent

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// Search is a query against the stored files: its text, its search terms
// and how many results it may return.
type Search struct {
	Query string
	Terms []string
	Limit int
}

// Search reads the task's query (the "query" param, else its instruction)
// and its "limit" param, def when not given. A "query" param given empty
// asks for every file, whatever the instruction says: the offline planner
// sends it for "summarize the documents", whose words name no document.
func (t *Task) Search(ec *schemas.ExecutionContext, def int) (Search, error) {
	query := strings.TrimSpace(ec.Param("query"))
	if _, given := ec.Params()["query"]; query == "" && !given {
		query = strings.TrimSpace(ec.Instruction())
	}
	limit, err := t.IntParam(ec, "limit", def)
	if err != nil {
		return Search{}, err
	}
	return Search{Query: query, Terms: Terms(query), Limit: limit}, nil
}

// Hit is a stored file and how well it matches a search.
type Hit struct {
	Ref   schemas.FileRef
	Score float64
}

// Rank keeps the hits that match (a score above zero, or any score when the
// query has no terms), best first, equal scores by DisplayName and then in
// the order given, at most s.Limit of them. It keeps the best s.Limit as it
// goes (a heap) rather than sorting every match.
func (s Search) Rank(hits []Hit) []Hit {
	h := &hitHeap{}
	for i, hit := range hits {
		if len(s.Terms) > 0 && hit.Score <= 0 {
			continue
		}
		r := ranked{Hit: hit, name: DisplayName(hit.Ref), at: i}
		switch {
		case len(h.r) < s.Limit:
			heap.Push(h, r)
		case s.Limit > 0 && before(r, h.r[0]):
			h.r[0] = r
			heap.Fix(h, 0)
		}
	}
	slices.SortFunc(h.r, func(x, y ranked) int {
		if before(x, y) {
			return -1
		}
		return 1
	})
	found := make([]Hit, len(h.r))
	for i, r := range h.r {
		found[i] = r.Hit
	}
	return found
}

// ranked is a hit with what orders it: its name and its place in the input.
type ranked struct {
	Hit
	name string
	at   int
}

// before reports whether x ranks before y: a higher score, else a name
// earlier in order, else earlier in the input.
func before(x, y ranked) bool {
	if x.Score != y.Score {
		return x.Score > y.Score
	}
	if c := strings.Compare(x.name, y.name); c != 0 {
		return c < 0
	}
	return x.at < y.at
}

// hitHeap holds the best hits so far with the one ranking last on top.
type hitHeap struct{ r []ranked }

func (h *hitHeap) Len() int           { return len(h.r) }
func (h *hitHeap) Less(i, j int) bool { return before(h.r[j], h.r[i]) }
func (h *hitHeap) Swap(i, j int)      { h.r[i], h.r[j] = h.r[j], h.r[i] }
func (h *hitHeap) Push(x any)         { h.r = append(h.r, x.(ranked)) }
func (h *hitHeap) Pop() any {
	x := h.r[len(h.r)-1]
	h.r = h.r[:len(h.r)-1]
	return x
}

// Found returns a search's outputs, the found files best first as the
// FILE_IDS value of the contract's output, and the start of its summary:
// `found 3 images for "sunset": a.jpg, b.jpg, c.jpg`, naming the first five.
func (t *Task) Found(s Search, found []Hit) (string, map[string]schemas.TypedValue) {
	out := t.contract.Outputs[0]
	ids := make([]string, len(found))
	for i, h := range found {
		ids[i] = h.Ref.ID
	}
	fc := schemas.FromIDs(out.ContentTypeHint, ids...).WithSource(t.contract.Capability)

	noun := out.ContentTypeHint // "images", "documents"
	one := strings.TrimSuffix(noun, "s")
	summary := fmt.Sprintf("found %s for %q", schemas.Plural(len(found), one, noun), s.Query)
	switch {
	case strings.TrimSpace(s.Query) == "":
		summary = fmt.Sprintf("found %s (no query, so every %s is listed)", schemas.Plural(len(found), one, noun), one)
	case len(s.Terms) == 0:
		summary = fmt.Sprintf("found %s (the query %q has no search words, so every %s is listed)",
			schemas.Plural(len(found), one, noun), s.Query, one)
	}
	if len(found) > 0 {
		names := make([]string, 0, 5)
		for _, h := range found[:min(5, len(found))] {
			names = append(names, DisplayName(h.Ref))
		}
		summary += ": " + strings.Join(names, ", ")
		if len(found) > len(names) {
			summary += ", ..."
		}
	}
	return summary, map[string]schemas.TypedValue{out.Name: schemas.FilesValue(fc, t.contract.Name)}
}

// Field is one place a search term can be found, with the weight a match
// there is worth.
type Field struct {
	Terms  map[string]bool
	Weight float64
}
