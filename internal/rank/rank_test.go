package rank

import (
	"math"
	"reflect"
	"testing"
)

func docOf(text string, vec ...float32) Doc { return NewDoc(text, vec) }

func ats(s []Scored) []int {
	out := make([]int, len(s))
	for i, x := range s {
		out[i] = x.At
	}
	return out
}

func TestBM25(t *testing.T) {
	docs := []Doc{
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
		got := ats(BM25(docs, Terms(tt.query)))
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: %v, want %v", tt.query, got, tt.want)
		}
	}
}

func TestDense(t *testing.T) {
	docs := []Doc{{Vector: []float32{1, 0}}, {Vector: []float32{0.6, 0.8}}, {Vector: []float32{0, 1}}, {Vector: []float32{1, 0, 0}}, {}}
	got := Dense(docs, []float32{0, 2})
	if !reflect.DeepEqual(ats(got), []int{2, 1, 0}) || math.Abs(got[0].Score-1) > 1e-9 {
		t.Errorf("dense = %+v", got)
	}
	if Dense(docs, nil) != nil {
		t.Error("no query vector must rank nothing")
	}
}

func TestFuse(t *testing.T) {
	lexical := []Scored{{At: 5}, {At: 1}, {At: 2}}
	semantic := []Scored{{At: 1}, {At: 7}, {At: 5}}
	got := Fuse(lexical, semantic)
	// 1: 1/62+1/61, 5: 1/61+1/63, 7: 1/62, 2: 1/63.
	if !reflect.DeepEqual(ats(got), []int{1, 5, 7, 2}) {
		t.Errorf("fuse = %+v", got)
	}
	if want := 1.0/62 + 1.0/61; math.Abs(got[0].Score-want) > 1e-12 {
		t.Errorf("score %v, want %v", got[0].Score, want)
	}
	if got := Fuse(lexical); !reflect.DeepEqual(ats(got), []int{5, 1, 2}) {
		t.Errorf("one ranking: %v", ats(got))
	}
}
