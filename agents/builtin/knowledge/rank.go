package knowledge

import (
	"cmp"
	"math"
	"slices"
)

// BM25 parameters: term frequency saturation and length normalisation.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// RRFK is reciprocal rank fusion's constant: a chunk ranked r-th (from 1)
// in a ranking adds 1/(RRFK+r) to its fused score.
const RRFK = 60

// doc is one chunk as the rankers see it: its terms with their counts and
// its length in terms, and its embedding (nil without a model).
type doc struct {
	tf     map[string]int
	length int
	vector []float32
}

// scored is a chunk (an index into the ranked docs) with its score.
type scored struct {
	at    int
	score float64
}

// bm25 ranks docs against the query terms by Okapi BM25, best first, over
// the statistics of docs themselves; docs matching no term are left out.
// Ties keep the order of docs.
func bm25(docs []doc, terms []string) []scored {
	if len(docs) == 0 || len(terms) == 0 {
		return nil
	}
	total := 0
	df := map[string]int{}
	for _, t := range terms {
		df[t] = 0
	}
	for _, d := range docs {
		total += d.length
		for t := range df {
			if d.tf[t] > 0 {
				df[t]++
			}
		}
	}
	avg := float64(total) / float64(len(docs))
	if avg == 0 {
		avg = 1
	}
	n := float64(len(docs))
	var out []scored
	for i, d := range docs {
		s := 0.0
		for _, t := range terms {
			f := float64(d.tf[t])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
			s += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(d.length)/avg))
		}
		if s > 0 {
			out = append(out, scored{at: i, score: s})
		}
	}
	sortScored(out)
	return out
}

// dense ranks docs by the cosine of their vector with q, best first; docs
// without a vector of q's size are left out.
func dense(docs []doc, q []float32) []scored {
	if len(q) == 0 {
		return nil
	}
	qn := norm(q)
	var out []scored
	for i, d := range docs {
		if len(d.vector) != len(q) {
			continue
		}
		dn := norm(d.vector)
		if dn == 0 || qn == 0 {
			continue
		}
		dot := 0.0
		for j, x := range q {
			dot += float64(x) * float64(d.vector[j])
		}
		out = append(out, scored{at: i, score: dot / (qn * dn)})
	}
	sortScored(out)
	return out
}

func norm(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// fuse combines rankings by reciprocal rank fusion: each chunk scores the
// sum of 1/(RRFK+rank) over the rankings it is in, best first; ties keep
// the order in which chunks first appear, ranking by ranking.
func fuse(rankings ...[]scored) []scored {
	at := map[int]int{}
	var out []scored
	for _, r := range rankings {
		for rank, s := range r {
			i, seen := at[s.at]
			if !seen {
				i = len(out)
				at[s.at] = i
				out = append(out, scored{at: s.at})
			}
			out[i].score += 1 / float64(RRFK+rank+1)
		}
	}
	sortScored(out)
	return out
}

// sortScored sorts best first, stable.
func sortScored(s []scored) {
	slices.SortStableFunc(s, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
}
