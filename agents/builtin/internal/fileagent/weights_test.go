package fileagent_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
)

// scoreFields is the definition TermWeights folds: each term adds the
// weight of the best field holding it, and matching every term adds one
// more point per term.
func scoreFields(terms []string, fields []fileagent.Field) float64 {
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

func TestTermWeightsScoreAsFields(t *testing.T) {
	words := []string{"sea", "sunset", "forest", "night", "city", "snow"}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = words[rng.IntN(len(words))]
		}
		return out
	}
	for i := range 2000 {
		var fields []fileagent.Field
		for range rng.IntN(5) {
			fields = append(fields, fileagent.Field{Terms: fileagent.TermSet(pick(rng.IntN(3))...), Weight: float64(1+rng.IntN(6)) / 2})
		}
		terms := pick(rng.IntN(4))
		if got, want := fileagent.Weigh(fields).Score(terms), scoreFields(terms, fields); got != want {
			t.Fatalf("case %d: terms %v over %v: TermWeights %v, fields %v", i, terms, fields, got, want)
		}
	}
}

// Rank keeping the best Limit as it goes gives what sorting every match
// and cutting would: by score, then name, then input order.
func TestRankTopMatchesFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		hits := make([]fileagent.Hit, rng.IntN(60))
		for j := range hits {
			hits[j] = hit(fmt.Sprintf("f%d.jpg", rng.IntN(8)), float64(rng.IntN(4)))
			hits[j].Ref.ID = fmt.Sprintf("id-%d", j)
		}
		s := fileagent.Search{Terms: []string{"x"}, Limit: 1 + rng.IntN(20)}
		if rng.IntN(4) == 0 {
			s.Terms = nil
		}
		var want []fileagent.Hit
		for _, h := range hits {
			if len(s.Terms) == 0 || h.Score > 0 {
				want = append(want, h)
			}
		}
		slices.SortStableFunc(want, func(x, y fileagent.Hit) int {
			if x.Score != y.Score {
				if x.Score > y.Score {
					return -1
				}
				return 1
			}
			return strings.Compare(x.Ref.Filename, y.Ref.Filename)
		})
		want = want[:min(len(want), s.Limit)]
		got := s.Rank(hits)
		if !slices.EqualFunc(got, want, func(a, b fileagent.Hit) bool { return a.Ref.ID == b.Ref.ID }) {
			t.Fatalf("case %d, limit %d: Rank gave %v; want %v", i, s.Limit, got, want)
		}
	}
}
