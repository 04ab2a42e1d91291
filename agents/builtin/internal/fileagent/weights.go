package fileagent

import (
	"context"

	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// TermWeights is a file's search terms, each with the weight of the best
// field (a place in the file's reference) it is found in: one lookup per
// query term, built once per version of a file (see Files).
type TermWeights map[string]float64

// Weigh folds fields into TermWeights.
func Weigh(fields []Field) TermWeights {
	w := TermWeights{}
	for _, f := range fields {
		for t := range f.Terms {
			if f.Weight > w[t] {
				w[t] = f.Weight
			}
		}
	}
	return w
}

// Score rates how well terms match: each term adds the weight of the best
// field it is found in, and matching every term adds one more point per
// term. Zero means no term matched.
func (w TermWeights) Score(terms []string) float64 {
	score, matched := 0.0, 0
	for _, t := range terms {
		if x := w[t]; x > 0 {
			score += x
			matched++
		}
	}
	if matched == len(terms) {
		score += float64(len(terms))
	}
	return score
}

// Files returns the stored files that keep accepts, as the catalog's
// index holds them (resolvers.Files): read their references, never change
// them. A store that cannot be listed is a task failure worth retrying.
func Files(ctx context.Context, cat resolvers.Catalog, keep func(schemas.FileRef) bool) ([]*resolvers.IndexedFile, error) {
	var out []*resolvers.IndexedFile
	for f, err := range resolvers.Files(ctx, cat) {
		if err != nil {
			return nil, &failure{code: schemas.CodeUnavailable, message: "listing stored files: " + err.Error(), retryable: true}
		}
		if keep(f.Ref) {
			out = append(out, f)
		}
	}
	return out, nil
}

// Snapshot returns the stored files (resolvers.Snapshot). A store that
// cannot be listed is a task failure worth retrying.
func Snapshot(ctx context.Context, cat resolvers.Catalog) (*resolvers.FileSet, error) {
	set, err := resolvers.Snapshot(ctx, cat)
	if err != nil {
		return nil, &failure{code: schemas.CodeUnavailable, message: "listing stored files: " + err.Error(), retryable: true}
	}
	return set, nil
}
