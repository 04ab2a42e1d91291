package gateway

import "slices"

// dotMaxEdges bounds the pipelines dot lays out: its time grows steeply
// with edges (a pipeline of 30 steps each depending on every earlier one,
// 435 edges, takes seconds; of 60, minutes), and one layout at a time runs.
// Pipelines people write have a few dozen.
const dotMaxEdges = 200

// Spacing of rowsLayout, in CSS pixels, near dot's (nodesep 0.35 in,
// ranksep 0.5 in).
const (
	rowGapX = 25.0
	rowGapY = 36.0
)

// drawnEdge reports whether the i-th parent of s is drawn: not s itself
// and not named twice.
func drawnEdge(s GraphStep, i int) bool {
	d := s.DependsOn[i]
	return d != s.ID && !slices.Contains(s.DependsOn[:i], d)
}

// countEdges counts the edges Layout draws for steps.
func countEdges(steps []GraphStep) int {
	ids := make(map[string]bool, len(steps))
	for _, s := range steps {
		ids[s.ID] = true
	}
	n := 0
	for _, s := range steps {
		for i, d := range s.DependsOn {
			if ids[d] && drawnEdge(s, i) {
				n++
			}
		}
	}
	return n
}

// rowsLayout places each wave on a row, its steps side by side in spec
// order and the rows centred, with straight edges: the layout of a
// pipeline too large for dot. An edge that skips a wave may cross a box.
func rowsLayout(steps []GraphStep) *Graph {
	var (
		uniq  []GraphStep
		seen  = map[string]int{}
		rows  [][]int // wave -> indexes into uniq
		width []float64
	)
	for _, s := range steps {
		if _, dup := seen[s.ID]; dup {
			continue
		}
		seen[s.ID] = len(uniq)
		uniq = append(uniq, s)
		w := max(s.Wave, 0)
		for len(rows) <= w {
			rows, width = append(rows, nil), append(width, 0)
		}
		nw, _ := nodeSize(s)
		if len(rows[w]) > 0 {
			width[w] += rowGapX
		}
		rows[w], width[w] = append(rows[w], len(uniq)-1), width[w]+nw
	}
	g := &Graph{Nodes: make([]GraphNode, len(uniq)), Edges: []GraphEdge{}, Width: slices.Max(append(width, 0))}
	y := 0.0
	for w, row := range rows {
		x := (g.Width - width[w]) / 2
		for _, i := range row {
			s := uniq[i]
			nw, nh := nodeSize(s)
			g.Nodes[i] = GraphNode{ID: s.ID, Kind: s.Kind, Agent: s.Agent, Wave: s.Wave, X: round2(x), Y: y, W: nw, H: nh}
			x += nw + rowGapX
		}
		if len(row) > 0 {
			y += nodeHeight + rowGapY
		}
	}
	g.Height = max(y-rowGapY, 0)
	for _, s := range uniq {
		to := g.Nodes[seen[s.ID]]
		for i, d := range s.DependsOn {
			p, ok := seen[d]
			if !ok || !drawnEdge(s, i) {
				continue
			}
			from := g.Nodes[p]
			a := [2]float64{round2(from.X + from.W/2), from.Y + from.H}
			b := [2]float64{round2(to.X + to.W/2), to.Y}
			third := func(k float64) [2]float64 {
				return [2]float64{round2(a[0] + (b[0]-a[0])*k/3), round2(a[1] + (b[1]-a[1])*k/3)}
			}
			g.Edges = append(g.Edges, GraphEdge{From: d, To: s.ID, Points: [][2]float64{a, third(1), third(2), b}})
		}
	}
	return g
}
