// Package rank ranks texts against a query: Okapi BM25 over terms, the
// cosine of embeddings, and reciprocal rank fusion of rankings. The
// KnowledgeAgent ranks chunks with it and the chat loop ranks remembered
// facts with it; it imports no other package of the mesh.
package rank

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

// RRFK is reciprocal rank fusion's constant: a text ranked r-th (from 1)
// in a ranking adds 1/(RRFK+r) to its fused score.
const RRFK = 60

// Doc is one text as the rankers see it: its terms with their counts and
// its length in terms, and its embedding (nil without a model).
type Doc struct {
	TF     map[string]int
	Length int
	Vector []float32
}

// NewDoc is text's Doc: its Terms counted, with vector (nil: none).
func NewDoc(text string, vector []float32) Doc {
	terms := Terms(text)
	tf := make(map[string]int, len(terms))
	for _, t := range terms {
		tf[t]++
	}
	return Doc{TF: tf, Length: len(terms), Vector: vector}
}

// Scored is a text (an index into the ranked docs) with its score.
type Scored struct {
	At    int
	Score float64
}

// BM25 ranks docs against the query terms by Okapi BM25, best first, over
// the statistics of docs themselves; docs matching no term are left out.
// Ties keep the order of docs.
func BM25(docs []Doc, terms []string) []Scored {
	if len(docs) == 0 || len(terms) == 0 {
		return nil
	}
	total := 0
	df := map[string]int{}
	for _, t := range terms {
		df[t] = 0
	}
	for _, d := range docs {
		total += d.Length
		for t := range df {
			if d.TF[t] > 0 {
				df[t]++
			}
		}
	}
	avg := float64(total) / float64(len(docs))
	if avg == 0 {
		avg = 1
	}
	n := float64(len(docs))
	var out []Scored
	for i, d := range docs {
		s := 0.0
		for _, t := range terms {
			f := float64(d.TF[t])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
			s += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(d.Length)/avg))
		}
		if s > 0 {
			out = append(out, Scored{At: i, Score: s})
		}
	}
	sortScored(out)
	return out
}

// Dense ranks docs by the cosine of their vector with q, best first; docs
// without a vector of q's size are left out.
func Dense(docs []Doc, q []float32) []Scored {
	if len(q) == 0 {
		return nil
	}
	qn := norm(q)
	var out []Scored
	for i, d := range docs {
		if len(d.Vector) != len(q) {
			continue
		}
		dn := norm(d.Vector)
		if dn == 0 || qn == 0 {
			continue
		}
		dot := 0.0
		for j, x := range q {
			dot += float64(x) * float64(d.Vector[j])
		}
		out = append(out, Scored{At: i, Score: dot / (qn * dn)})
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

// Fuse combines rankings by reciprocal rank fusion: each text scores the
// sum of 1/(RRFK+rank) over the rankings it is in, best first; ties keep
// the order in which texts first appear, ranking by ranking.
func Fuse(rankings ...[]Scored) []Scored {
	at := map[int]int{}
	var out []Scored
	for _, r := range rankings {
		for rank, s := range r {
			i, seen := at[s.At]
			if !seen {
				i = len(out)
				at[s.At] = i
				out = append(out, Scored{At: s.At})
			}
			out[i].Score += 1 / float64(RRFK+rank+1)
		}
	}
	sortScored(out)
	return out
}

// sortScored sorts best first, stable.
func sortScored(s []Scored) {
	slices.SortStableFunc(s, func(a, b Scored) int { return cmp.Compare(b.Score, a.Score) })
}
