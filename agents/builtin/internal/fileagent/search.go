package fileagent

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/resolvers"
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
// and its "limit" param, def when not given.
func (t *Task) Search(ec *schemas.ExecutionContext, def int) (Search, error) {
	query := strings.TrimSpace(ec.Param("query"))
	if query == "" {
		query = strings.TrimSpace(ec.Instruction())
	}
	limit, err := t.IntParam(ec, "limit", def)
	if err != nil {
		return Search{}, err
	}
	return Search{Query: query, Terms: Terms(query), Limit: limit}, nil
}

// List returns the references of the stored files that keep accepts. A
// store that cannot be listed is a task failure worth retrying.
func List(ctx context.Context, cat resolvers.Catalog, keep func(schemas.FileRef) bool) ([]schemas.FileRef, error) {
	var out []schemas.FileRef
	for ref, err := range cat.List(ctx) {
		if err != nil {
			return nil, &failure{code: schemas.CodeUnavailable, message: "listing stored files: " + err.Error(), retryable: true}
		}
		if keep(ref) {
			out = append(out, ref)
		}
	}
	return out, nil
}

// Hit is a stored file and how well it matches a search.
type Hit struct {
	Ref   schemas.FileRef
	Score float64
}

// Rank keeps the hits that match (a score above zero, or any score when the
// query has no terms), best first, equal scores by DisplayName, at most
// s.Limit of them.
func (s Search) Rank(hits []Hit) []Hit {
	var found []Hit
	for _, h := range hits {
		if len(s.Terms) == 0 || h.Score > 0 {
			found = append(found, h)
		}
	}
	slices.SortStableFunc(found, func(x, y Hit) int {
		if c := cmp.Compare(y.Score, x.Score); c != 0 {
			return c
		}
		return strings.Compare(DisplayName(x.Ref), DisplayName(y.Ref))
	})
	if len(found) > s.Limit {
		found = found[:s.Limit]
	}
	return found
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
	if len(s.Terms) == 0 {
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

// ScoreFields rates terms against fields: each term adds the weight of the
// best field it is found in, and matching every term adds one more point per
// term. Zero means no term matched.
func ScoreFields(terms []string, fields []Field) float64 {
	score, matched := 0.0, 0
	for _, t := range terms {
		best := 0.0
		for _, f := range fields {
			if f.Terms[t] {
				best = math.Max(best, f.Weight)
			}
		}
		if best > 0 {
			matched++
		}
		score += best
	}
	if matched == len(terms) {
		score += float64(len(terms))
	}
	return score
}
