package imagesearch

import (
	"cmp"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
	"github.com/agentmesh/agentmesh/resolvers"
)

// searchIndex is what a search needs of every stored image, built once per
// version of the store's file set (resolvers.DeriveSet): the images in id
// order, what is known of each, and, once every image has current visual
// words, an inverted index from each search term to the images holding it,
// best match first.
type searchIndex struct {
	files       []*resolvers.IndexedFile
	known       []known
	pending     int // images without current visual words
	undecodable int
	postings    map[string][]posting // nil while pending > 0
}

// posting is one image holding a term, with the term's weight there.
type posting struct {
	at     int32 // into files
	weight float64
}

// indexKey keys the searchIndex of a file set.
type indexKey struct{}

// buildIndex is the searchIndex of set; the postings only when the set is
// kept. The per-image part (known) comes from each file's own index entry,
// so a change to one image weighs only that image again.
func buildIndex(set *resolvers.FileSet) *searchIndex {
	ix := &searchIndex{}
	for _, f := range set.Files {
		if !isImage(f.Ref) {
			continue
		}
		k := resolvers.Derive(f, knownKey{}, knownOf)
		ix.files = append(ix.files, f)
		ix.known = append(ix.known, k)
		switch {
		case !k.visualDone:
			ix.pending++
		case k.undecodable:
			ix.undecodable++
		}
	}
	if ix.pending > 0 || !set.Kept {
		// A search computes the missing words, changing the set; a set
		// listed for one task serves no other.
		return ix
	}
	ix.postings = map[string][]posting{}
	for i, k := range ix.known {
		for t, w := range k.weights {
			ix.postings[t] = append(ix.postings[t], posting{at: int32(i), weight: w})
		}
	}
	names := make([]string, len(ix.files))
	for i, f := range ix.files {
		names[i] = fileagent.DisplayName(f.Ref)
	}
	// In the order Rank gives when a term is the whole query.
	for _, ps := range ix.postings {
		slices.SortFunc(ps, func(x, y posting) int {
			if c := cmp.Compare(y.weight, x.weight); c != 0 {
				return c
			}
			if c := strings.Compare(names[x.at], names[y.at]); c != 0 {
				return c
			}
			return cmp.Compare(x.at, y.at)
		})
	}
	return ix
}

// candidates are the indexed images for the scan.
func (ix *searchIndex) candidates() []candidate {
	out := make([]candidate, len(ix.files))
	for i, f := range ix.files {
		out[i] = candidate{ref: &f.Ref, known: ix.known[i]}
	}
	return out
}

// search answers a query of at least one term from the postings, ranked
// as s.Rank ranks a scan's hits. ok is false when the index has no
// postings (some image still needs its visual words): scan instead.
func (ix *searchIndex) search(s fileagent.Search) (found []fileagent.Hit, ok bool) {
	if ix.postings == nil || len(s.Terms) == 0 {
		return nil, false
	}
	if len(s.Terms) == 1 {
		// Matching the only term earns its weight plus one point.
		ps := ix.postings[s.Terms[0]]
		found = make([]fileagent.Hit, 0, min(len(ps), s.Limit))
		for _, p := range ps[:min(len(ps), s.Limit)] {
			found = append(found, fileagent.Hit{Ref: ix.files[p.at].Ref, Score: p.weight + 1})
		}
		return found, true
	}
	scores := map[int32]float64{}
	for _, t := range s.Terms {
		for _, p := range ix.postings[t] {
			scores[p.at] += p.weight
		}
	}
	ats := make([]int32, 0, len(scores))
	for at := range scores {
		ats = append(ats, at)
	}
	slices.Sort(ats) // the scan's order, which Rank keeps among equals
	hits := make([]fileagent.Hit, len(ats))
	for i, at := range ats {
		// The scan's score, with the bonus for matching every term.
		hits[i] = fileagent.Hit{Ref: ix.files[at].Ref, Score: ix.known[at].weights.Score(s.Terms)}
	}
	return s.Rank(hits), true
}
