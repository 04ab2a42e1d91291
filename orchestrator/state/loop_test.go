package state

import (
	"slices"
	"testing"
)

// TestLoopProgress: items end in any order, the progress stays as small as
// the parallelism, Fill keeps at most Parallel running and none after a
// stop, and Over is true once every started item ended and no more start.
func TestLoopProgress(t *testing.T) {
	p := &LoopProgress{N: 6, Parallel: 3}
	if got := p.Fill(); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("first fill %v", got)
	}
	steps := []struct {
		end     int
		ok      bool
		fill    []int
		running []int
		low     int
	}{
		{end: 2, ok: true, fill: []int{3}, running: []int{0, 1, 3}, low: 0},
		{end: 2, ok: false, fill: nil, running: []int{0, 1, 3}, low: 0}, // a duplicate
		{end: 5, ok: false, fill: nil, running: []int{0, 1, 3}, low: 0}, // not started
		{end: 0, ok: true, fill: []int{4}, running: []int{1, 3, 4}, low: 1},
		{end: 1, ok: true, fill: []int{5}, running: []int{3, 4, 5}, low: 3},
		{end: 4, ok: true, fill: nil, running: []int{3, 5}, low: 3},
	}
	for i, s := range steps {
		if ok := p.End(s.end); ok != s.ok {
			t.Fatalf("step %d: End(%d) = %v", i, s.end, ok)
		}
		if got := p.Fill(); !slices.Equal(got, s.fill) {
			t.Fatalf("step %d: Fill = %v, want %v", i, got, s.fill)
		}
		if got := p.Running(); !slices.Equal(got, s.running) || p.Low != s.low || len(p.Ended) > p.Parallel {
			t.Fatalf("step %d: running %v low %d ended %v", i, got, p.Low, p.Ended)
		}
		if p.Over() {
			t.Fatalf("step %d: over too early", i)
		}
	}
	p.End(5)
	p.End(3)
	if !p.Over() || p.Low != 6 || p.Ended != nil || p.Describe() != "6 of 6 ended, 0 running" {
		t.Fatalf("not over: %+v (%s)", p, p.Describe())
	}

	q := &LoopProgress{N: 10, Parallel: 2}
	q.Fill()
	q.Stop = "item 1 failed"
	q.End(0)
	if got := q.Fill(); got != nil || q.Over() {
		t.Fatalf("after a stop: fill %v, over %v", got, q.Over())
	}
	q.End(1)
	if !q.Over() {
		t.Fatal("a stopped loop with nothing running is over")
	}
}
