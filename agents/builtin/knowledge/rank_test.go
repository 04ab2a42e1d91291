package knowledge

import (
	"math"
	"reflect"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
)

func docOf(text string, vec ...float32) doc {
	tf := map[string]int{}
	terms := fileagent.Terms(text)
	for _, t := range terms {
		tf[t]++
	}
	return doc{tf: tf, length: len(terms), vector: vec}
}

func ats(s []scored) []int {
	out := make([]int, len(s))
	for i, x := range s {
		out[i] = x.at
	}
	return out
}

func TestBM25(t *testing.T) {
	docs := []doc{
		docOf("refund refund refund policy"),
		docOf("shipping costs are not refunded"),
		docOf("a refund within thirty days of purchase"),
		docOf("the forest survey counted trees"),
	}
	tests := []struct {
		query string
		want  []int
	}{
		{"refund", []int{0, 2}},          // more occurrences in a short chunk first
		{"forest trees", []int{3}},       // nothing else matches
		{"refund purchase", []int{2, 0}}, // the rarer term weighs more
		{"nothing here", []int{}},
	}
	for _, tt := range tests {
		got := ats(bm25(docs, fileagent.Terms(tt.query)))
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: %v, want %v", tt.query, got, tt.want)
		}
	}
}

func TestDense(t *testing.T) {
	docs := []doc{{vector: []float32{1, 0}}, {vector: []float32{0.6, 0.8}}, {vector: []float32{0, 1}}, {vector: []float32{1, 0, 0}}, {}}
	got := dense(docs, []float32{0, 2})
	if !reflect.DeepEqual(ats(got), []int{2, 1, 0}) || math.Abs(got[0].score-1) > 1e-9 {
		t.Errorf("dense = %+v", got)
	}
	if dense(docs, nil) != nil {
		t.Error("no query vector must rank nothing")
	}
}

func TestFuse(t *testing.T) {
	lexical := []scored{{at: 5}, {at: 1}, {at: 2}}
	semantic := []scored{{at: 1}, {at: 7}, {at: 5}}
	got := fuse(lexical, semantic)
	// 1: 1/62+1/61, 5: 1/61+1/63, 7: 1/62, 2: 1/63.
	if !reflect.DeepEqual(ats(got), []int{1, 5, 7, 2}) {
		t.Errorf("fuse = %+v", got)
	}
	if want := 1.0/62 + 1.0/61; math.Abs(got[0].score-want) > 1e-12 {
		t.Errorf("score %v, want %v", got[0].score, want)
	}
	if got := fuse(lexical); !reflect.DeepEqual(ats(got), []int{5, 1, 2}) {
		t.Errorf("one ranking: %v", ats(got))
	}
}
