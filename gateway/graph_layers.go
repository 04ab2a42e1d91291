package gateway

import (
	"context"
	"slices"
)

// Spacing of the layout, in CSS pixels.
const (
	gapX       = 25.0 // between two boxes of a row
	gapY       = 36.0 // between two rows
	bendWidth  = 10.0 // the room an edge passing through a row takes in it
	layoutIter = 4    // ordering and placing passes, each down then up
)

// maxBends bounds the bends a layout routes edges through: an edge that
// skips rows passes each of them at a place of its own, between the boxes.
// A pipeline whose edges would need more (hundreds of edges, each across
// many waves) gets straight edges, which may cross boxes.
const maxBends = 2000

// drawnEdge reports whether the i-th parent of s is drawn: not s itself
// and not named twice.
func drawnEdge(s GraphStep, i int) bool {
	d := s.DependsOn[i]
	return d != s.ID && !slices.Contains(s.DependsOn[:i], d)
}

// slot is one place in a row: a step's box, or a bend of an edge that
// passes the row.
type slot struct {
	step  int // index into the steps placed, -1 for a bend
	w     float64
	x     float64 // left side
	pos   int     // index in its row
	up    []int   // slots in the row above joined to this one
	down  []int   // slots in the row below
	row   int
	order float64 // sort key of the ordering pass
}

// layered lays steps out in layers, the way Sugiyama's method does: each
// wave is a row, top to bottom; an edge that skips rows gets a bend in each
// row it passes, so it runs between the boxes, not through them; each row's
// order is sorted by where its neighbours are (the barycentre) to uncross
// edges, kept from the pass with the fewest crossings; boxes are then
// moved as near as they can get to the middle of their neighbours. Edges
// leave the bottom of a box and enter the top of another at ports spread
// in the order of their other ends. A repeated id is placed once, an edge
// to an unknown step left out. When ctx ends, it stops improving the order
// and places what it has.
func layered(ctx context.Context, steps []GraphStep) *Graph {
	var (
		uniq  []GraphStep
		index = map[string]int{}
	)
	for _, s := range steps {
		if _, dup := index[s.ID]; !dup {
			index[s.ID] = len(uniq)
			uniq = append(uniq, s)
		}
	}
	nrows := 0
	for _, s := range uniq {
		nrows = max(nrows, max(s.Wave, 0)+1)
	}
	var (
		slots  []*slot
		rows   = make([][]int, nrows)
		stepAt = make([]int, len(uniq)) // step -> slot
	)
	add := func(row, step int, w float64) int {
		slots = append(slots, &slot{step: step, w: w, row: row, pos: len(rows[row])})
		rows[row] = append(rows[row], len(slots)-1)
		return len(slots) - 1
	}
	for i, s := range uniq {
		w, _ := nodeSize(s)
		stepAt[i] = add(max(s.Wave, 0), i, w)
	}
	type edge struct {
		from, to string
		path     []int // slots from the parent's box to the child's
	}
	var edges []edge
	bends := 0
	for _, s := range uniq {
		for i, d := range s.DependsOn {
			if p, ok := index[d]; ok && drawnEdge(s, i) {
				bends += max(s.Wave-uniq[p].Wave-1, 0)
				edges = append(edges, edge{from: d, to: s.ID})
			}
		}
	}
	routed := bends <= maxBends
	for k := range edges {
		e := &edges[k]
		a, b := stepAt[index[e.from]], stepAt[index[e.to]]
		e.path = []int{a}
		if routed {
			for r := slots[a].row + 1; r < slots[b].row; r++ {
				e.path = append(e.path, add(r, -1, bendWidth))
			}
		}
		e.path = append(e.path, b)
		for j := 1; j < len(e.path); j++ {
			u, v := slots[e.path[j-1]], slots[e.path[j]]
			if u.row < v.row {
				u.down, v.up = append(u.down, e.path[j]), append(v.up, e.path[j-1])
			}
		}
	}

	order(ctx, slots, rows)
	width := place(ctx, slots, rows)

	g := &Graph{Nodes: make([]GraphNode, len(uniq)), Edges: make([]GraphEdge, 0, len(edges)), Width: round2(width)}
	top := func(row int) float64 { return float64(row) * (nodeHeight + gapY) }
	for i, s := range uniq {
		sl := slots[stepAt[i]]
		g.Nodes[i] = GraphNode{ID: s.ID, Kind: s.Kind, Agent: s.Agent, Wave: s.Wave, X: round2(sl.x), Y: top(sl.row), W: sl.w, H: nodeHeight}
	}
	if nrows > 0 {
		g.Height = top(nrows-1) + nodeHeight
	}
	// port is where the edge from slot a to slot b (a neighbour of a in the
	// row above or below) meets a's box: its side's points spread in the
	// order of the neighbours.
	port := func(a, b int, below bool) [2]float64 {
		sa := slots[a]
		ns, y := sa.up, top(sa.row)
		if below {
			ns, y = sa.down, top(sa.row)+nodeHeight
		}
		if sa.step < 0 {
			return [2]float64{round2(sa.x + sa.w/2), y}
		}
		xs := make([]int, 0, len(ns))
		for _, n := range ns {
			xs = append(xs, slots[n].pos)
		}
		slices.Sort(xs)
		k := slices.Index(xs, slots[b].pos)
		return [2]float64{round2(sa.x + sa.w*float64(k+1)/float64(len(xs)+1)), y}
	}
	for _, e := range edges {
		var pts [][2]float64
		for j := 1; j < len(e.path); j++ {
			a, b := e.path[j-1], e.path[j]
			p, q := port(a, b, true), port(b, a, false)
			if slots[a].row >= slots[b].row { // not downwards: a straight line
				p, q = boxCentre(slots[a], top), boxCentre(slots[b], top)
			}
			if j == 1 {
				pts = append(pts, p)
			} else if slots[a].step < 0 { // through the bend's row
				pts = append(pts, [2]float64{p[0], round2(p[1] - nodeHeight*2/3)}, [2]float64{p[0], round2(p[1] - nodeHeight/3)}, p)
			}
			dy := (q[1] - p[1]) / 2
			pts = append(pts, [2]float64{p[0], round2(p[1] + dy)}, [2]float64{q[0], round2(q[1] - dy)}, q)
		}
		g.Edges = append(g.Edges, GraphEdge{From: e.from, To: e.to, Points: pts})
	}
	return g
}

func boxCentre(s *slot, top func(int) float64) [2]float64 {
	return [2]float64{round2(s.x + s.w/2), top(s.row) + nodeHeight/2}
}

// order sorts each row by the barycentre of its neighbours' positions,
// sweeping down then up, and keeps the order with the fewest crossings
// (the last one, when there are too many edges to count them).
func order(ctx context.Context, slots []*slot, rows [][]int) {
	best := snapshot(rows)
	bestCross, counted := crossings(slots, rows)
	sweep := func(r int, neighbours func(*slot) []int) {
		for _, i := range rows[r] {
			s := slots[i]
			s.order = float64(s.pos)
			if ns := neighbours(s); len(ns) > 0 {
				sum := 0.0
				for _, n := range ns {
					sum += float64(slots[n].pos)
				}
				s.order = sum / float64(len(ns))
			}
		}
		slices.SortStableFunc(rows[r], func(a, b int) int {
			switch oa, ob := slots[a].order, slots[b].order; {
			case oa < ob:
				return -1
			case oa > ob:
				return 1
			}
			return 0
		})
		for p, i := range rows[r] {
			slots[i].pos = p
		}
	}
	for it := 0; it < layoutIter && (bestCross > 0 || !counted) && ctx.Err() == nil; it++ {
		for r := 1; r < len(rows); r++ {
			sweep(r, func(s *slot) []int { return s.up })
		}
		for r := len(rows) - 2; r >= 0; r-- {
			sweep(r, func(s *slot) []int { return s.down })
		}
		if !counted {
			continue
		}
		if c, _ := crossings(slots, rows); c < bestCross {
			best, bestCross = snapshot(rows), c
		}
	}
	if !counted {
		return
	}
	for r := range rows {
		copy(rows[r], best[r])
		for p, i := range rows[r] {
			slots[i].pos = p
		}
	}
}

func snapshot(rows [][]int) [][]int {
	out := make([][]int, len(rows))
	for r := range rows {
		out[r] = slices.Clone(rows[r])
	}
	return out
}

// crossings counts the pairs of edges between two adjacent rows that
// cross. Past maxCounted edges between two rows it gives up: not counted.
func crossings(slots []*slot, rows [][]int) (n int, counted bool) {
	for r := 0; r+1 < len(rows); r++ {
		var ends [][2]int
		for _, i := range rows[r] {
			for _, d := range slots[i].down {
				ends = append(ends, [2]int{slots[i].pos, slots[d].pos})
			}
		}
		if len(ends) > maxCounted {
			return 1, false
		}
		for a := range ends {
			for _, b := range ends[a+1:] {
				if (ends[a][0]-b[0])*(ends[a][1]-b[1]) < 0 {
					n++
				}
			}
		}
	}
	return n, true
}

// maxCounted bounds the edges between two rows whose crossings are
// counted, pair by pair.
const maxCounted = 3000

// place gives each slot its x: rows packed in their order, then each box
// moved, pass after pass, as near to the middle of its neighbours as the
// boxes beside it let it. It returns the drawing's width.
func place(ctx context.Context, slots []*slot, rows [][]int) float64 {
	widest := 0.0
	for _, row := range rows {
		x := 0.0
		for _, i := range row {
			slots[i].x = x
			x += slots[i].w + gapX
		}
		widest = max(widest, x-gapX)
	}
	for _, row := range rows { // centred to start
		if len(row) == 0 {
			continue
		}
		last := slots[row[len(row)-1]]
		shift := (widest - (last.x + last.w)) / 2
		for _, i := range row {
			slots[i].x += shift
		}
	}
	centre := func(i int) float64 { return slots[i].x + slots[i].w/2 }
	align := func(r int, neighbours func(*slot) []int) {
		want := make([]float64, len(rows[r]))
		for p, i := range rows[r] {
			s := slots[i]
			want[p] = s.x
			if ns := neighbours(s); len(ns) > 0 {
				sum := 0.0
				for _, n := range ns {
					sum += centre(n)
				}
				want[p] = sum/float64(len(ns)) - s.w/2
			}
		}
		xs := nearestSpaced(want, rows[r], slots)
		for p, i := range rows[r] {
			slots[i].x = xs[p]
		}
	}
	for it := 0; it < layoutIter && ctx.Err() == nil; it++ {
		for r := 1; r < len(rows); r++ {
			align(r, func(s *slot) []int { return s.up })
		}
		for r := len(rows) - 2; r >= 0; r-- {
			align(r, func(s *slot) []int { return s.down })
		}
	}
	left, right := 0.0, 0.0
	for i, s := range slots {
		if i == 0 || s.x < left {
			left = s.x
		}
		right = max(right, s.x+s.w)
	}
	for _, s := range slots {
		s.x -= left
	}
	return right - left
}

// nearestSpaced returns the left sides, in the row's order, nearest to
// want (least squares) that keep gapX between neighbours: with the offset
// each box needs from the first taken out, that is an isotonic regression,
// solved by pooling adjacent violators.
func nearestSpaced(want []float64, row []int, slots []*slot) []float64 {
	off := make([]float64, len(row))
	for p := 1; p < len(row); p++ {
		off[p] = off[p-1] + slots[row[p-1]].w + gapX
	}
	type block struct {
		sum  float64
		n    int
		last int
	}
	var blocks []block
	for p := range row {
		blocks = append(blocks, block{sum: want[p] - off[p], n: 1, last: p})
		for len(blocks) > 1 {
			a, b := blocks[len(blocks)-2], blocks[len(blocks)-1]
			if a.sum/float64(a.n) <= b.sum/float64(b.n) {
				break
			}
			blocks = append(blocks[:len(blocks)-2], block{sum: a.sum + b.sum, n: a.n + b.n, last: b.last})
		}
	}
	xs := make([]float64, len(row))
	p := 0
	for _, b := range blocks {
		for ; p <= b.last; p++ {
			xs[p] = b.sum/float64(b.n) + off[p]
		}
	}
	return xs
}
