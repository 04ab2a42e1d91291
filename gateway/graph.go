package gateway

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	graphviz "github.com/goccy/go-graphviz"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// Graph is a pipeline run's DAG laid out for drawing, the body of
// GET /api/runs/{id}/graph. Coordinates are in CSS pixels with the origin at
// the top left and y growing downwards, as SVG draws them; wave 0 is at the
// top.
type Graph struct {
	Nodes  []GraphNode `json:"nodes"`
	Edges  []GraphEdge `json:"edges"`
	Width  float64     `json:"width"`
	Height float64     `json:"height"`
}

// GraphNode is one step placed: (X, Y) is its box's top-left corner and
// W×H its size.
type GraphNode struct {
	ID    string  `json:"id"`
	Kind  string  `json:"kind"`
	Agent string  `json:"agent,omitempty"`
	Wave  int     `json:"wave"`
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	W     float64 `json:"w"`
	H     float64 `json:"h"`
	State string  `json:"state"`
}

// GraphEdge is one depends_on edge, from the parent to the child. Points
// are the control points of a cubic Bézier spline (the first point, then
// three per segment: SVG's "M p0 C p1 p2 p3 ..."); Arrow, when set, is the
// tip of the arrowhead beyond the spline's last point.
type GraphEdge struct {
	From   string       `json:"from"`
	To     string       `json:"to"`
	Points [][2]float64 `json:"points"`
	Arrow  *[2]float64  `json:"arrow,omitempty"`
}

// GraphStep is what the layout needs to know of one step.
type GraphStep struct {
	ID        string
	Kind      string
	Agent     string
	Wave      int
	State     string
	DependsOn []string
}

// Node boxes: tall enough for two lines (the step and its agent), wide
// enough for the longer of them at about 7 px a character.
const (
	nodeHeight   = 46.0
	nodeMinWidth = 120.0
	charWidth    = 7.2
	pointsPerIn  = 72.0
)

// graphLayouts serialises the layouts: one Graphviz instance (a WebAssembly
// module) is made on first use and serves every layout after it, one at a
// time, as the instance is not safe for concurrent use.
var graphLayouts struct {
	sync.Mutex
	gv *graphviz.Graphviz
}

// LayoutRun lays out run's pipeline with GraphSteps.
func LayoutRun(ctx context.Context, run *state.RunState) (*Graph, error) {
	return Layout(ctx, GraphSteps(run))
}

// GraphSteps reads the steps of run in spec order with their wave, kind and
// state (pending for a step the run has not reached).
func GraphSteps(run *state.RunState) []GraphStep {
	wave := map[string]int{}
	for w, ids := range run.Waves {
		for _, id := range ids {
			wave[id] = w
		}
	}
	steps := make([]GraphStep, 0, len(run.Spec.Steps))
	for _, s := range run.Spec.Steps {
		gs := GraphStep{ID: s.ID, Kind: s.Kind, Agent: s.Agent, Wave: wave[s.ID], State: schemas.StepPending, DependsOn: s.DependsOn}
		if gs.Kind == "" {
			gs.Kind = schemas.StepKindAgent
		}
		if st := run.Steps[s.ID]; st != nil && st.Status != "" {
			gs.State = st.Status
		}
		steps = append(steps, gs)
	}
	return steps
}

// Layout places steps with Graphviz's dot, top to bottom, one rank per
// wave: the steps of a wave share a rank, so a wave is drawn below the one
// before it even when no edge joins them directly. Edges name parents by
// depends_on; one naming an unknown step is left out. Positions depend on
// the steps and edges only, so they are kept (see layoutCache) and a run's
// graph asked again as its steps change state is not laid out again. A
// pipeline with more than dotMaxEdges edges, which dot would take seconds
// to minutes over, is laid out in plain rows (rowsLayout).
func Layout(ctx context.Context, steps []GraphStep) (*Graph, error) {
	key := layoutKey(steps)
	if g, ok := layoutCache.get(key); ok {
		return g.withStates(steps), nil
	}
	var (
		g   *Graph
		err error
	)
	if countEdges(steps) > dotMaxEdges {
		g = rowsLayout(steps)
	} else if g, err = dotLayout(ctx, steps); err != nil {
		return nil, err
	}
	layoutCache.put(key, g)
	return g.withStates(steps), nil
}

// dotLayout lays steps out with Graphviz's dot.
func dotLayout(ctx context.Context, steps []GraphStep) (*Graph, error) {
	graphLayouts.Lock()
	defer graphLayouts.Unlock()
	if graphLayouts.gv == nil {
		gv, err := graphviz.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("graph layout: start graphviz: %w", err)
		}
		graphLayouts.gv = gv
	}
	gv := graphLayouts.gv
	g, err := gv.Graph(graphviz.WithName("run"))
	if err != nil {
		return nil, fmt.Errorf("graph layout: %w", err)
	}
	defer g.Close()
	placed, err := buildGraph(g, steps)
	if err != nil {
		return nil, fmt.Errorf("graph layout: %w", err)
	}
	if err := gv.Render(ctx, g, graphviz.XDOT, io.Discard); err != nil {
		return nil, fmt.Errorf("graph layout: dot: %w", err)
	}
	return readLayout(g, placed)
}

// placed is a graph built for layout: each step's node and each edge, in
// spec order.
type placed struct {
	steps []GraphStep
	nodes []*graphviz.Node // nodes[i] is steps[i]'s
	edges []placedEdge
}

type placedEdge struct {
	from, to string
	e        *graphviz.Edge
}

// buildGraph adds steps to g as fixed-size boxes, one same-rank subgraph
// per wave, and their depends_on edges. Graphviz knows the nodes by their
// index ("s0", "s1", ...), never by the step id, so an id's characters
// (quotes, NUL, "->") mean nothing to it; a repeated id is placed once.
func buildGraph(g *graphviz.Graph, steps []GraphStep) (*placed, error) {
	g.SetRankDir(graphviz.TBRank).SetNodeSeparator(0.35).SetRankSeparator(0.5)
	p := &placed{}
	index := map[string]*graphviz.Node{}
	waves := map[int]*graphviz.Graph{}
	for _, s := range steps {
		if _, dup := index[s.ID]; dup {
			continue
		}
		n, err := g.CreateNodeByName("s" + strconv.Itoa(len(p.nodes)))
		if err != nil {
			return nil, err
		}
		w, h := nodeSize(s)
		n.SetShape(graphviz.BoxShape).SetFixedSize(true).SetWidth(w / pointsPerIn).SetHeight(h / pointsPerIn).SetLabel("")
		index[s.ID] = n
		p.steps, p.nodes = append(p.steps, s), append(p.nodes, n)
		rank, ok := waves[s.Wave]
		if !ok {
			if rank, err = g.CreateSubGraphByName("wave" + strconv.Itoa(s.Wave)); err != nil {
				return nil, err
			}
			if err := rank.SafeSet("rank", "same", ""); err != nil {
				return nil, err
			}
			waves[s.Wave] = rank
		}
		if _, err := rank.CreateSubNode(n); err != nil {
			return nil, err
		}
	}
	for _, s := range p.steps {
		for i, d := range s.DependsOn {
			from, ok := index[d]
			if !ok || !drawnEdge(s, i) {
				continue
			}
			e, err := g.CreateEdgeByName("e"+strconv.Itoa(len(p.edges)), from, index[s.ID])
			if err != nil {
				return nil, err
			}
			p.edges = append(p.edges, placedEdge{from: d, to: s.ID, e: e})
		}
	}
	return p, nil
}

// nodeSize is the box of a step in points: two lines, the step id and its
// agent (or kind).
func nodeSize(s GraphStep) (w, h float64) {
	label := max(len(s.ID), len(s.Agent), len(s.Kind))
	return round2(max(nodeMinWidth, float64(label)*charWidth+28)), nodeHeight
}

// readLayout reads the positions dot wrote into the attributes of g and
// its nodes and edges, flipping y so the top of the drawing is 0.
func readLayout(g *graphviz.Graph, p *placed) (*Graph, error) {
	bb, err := parseFloats(g.GetStr("bb"), 4)
	if err != nil {
		return nil, fmt.Errorf("graph layout: bounding box %q: %w", g.GetStr("bb"), err)
	}
	out := &Graph{Nodes: make([]GraphNode, 0, len(p.steps)), Edges: make([]GraphEdge, 0, len(p.edges)),
		Width: round2(bb[2] - bb[0]), Height: round2(bb[3] - bb[1])}
	flip := func(x, y float64) [2]float64 { return [2]float64{round2(x - bb[0]), round2(bb[3] - y)} }
	for i, s := range p.steps {
		c, err := parseFloats(p.nodes[i].GetStr("pos"), 2)
		if err != nil {
			return nil, fmt.Errorf("graph layout: step %q position %q: %w", s.ID, p.nodes[i].GetStr("pos"), err)
		}
		w, h := nodeSize(s)
		at := flip(c[0], c[1])
		out.Nodes = append(out.Nodes, GraphNode{ID: s.ID, Kind: s.Kind, Agent: s.Agent, Wave: s.Wave, State: s.State,
			X: round2(at[0] - w/2), Y: round2(at[1] - h/2), W: w, H: h})
	}
	for _, e := range p.edges {
		ge, err := parseSpline(e.e.GetStr("pos"), flip)
		if err != nil {
			return nil, fmt.Errorf("graph layout: edge %s -> %s: %w", e.from, e.to, err)
		}
		ge.From, ge.To = e.from, e.to
		out.Edges = append(out.Edges, ge)
	}
	return out, nil
}

// parseSpline reads dot's edge pos attribute: optional "s,x,y" and "e,x,y"
// end points, then the spline's control points, all space-separated
// (a backslash-newline may split the text).
func parseSpline(pos string, flip func(x, y float64) [2]float64) (GraphEdge, error) {
	var e GraphEdge
	pos = strings.ReplaceAll(pos, "\\\n", "")
	for _, f := range strings.Fields(pos) {
		var end string
		if rest, ok := strings.CutPrefix(f, "e,"); ok {
			end, f = "e", rest
		} else if rest, ok := strings.CutPrefix(f, "s,"); ok {
			end, f = "s", rest
		}
		c, err := parseFloats(f, 2)
		if err != nil {
			return e, fmt.Errorf("spline %q: %w", pos, err)
		}
		p := flip(c[0], c[1])
		switch end {
		case "e":
			e.Arrow = &p
		case "s": // the tail has no arrow; the spline starts at the node already
		default:
			e.Points = append(e.Points, p)
		}
	}
	if len(e.Points) < 4 || (len(e.Points)-1)%3 != 0 {
		return e, fmt.Errorf("spline %q has %d control points, want 1+3n", pos, len(e.Points))
	}
	return e, nil
}

// parseFloats reads exactly n comma-separated numbers.
func parseFloats(s string, n int) ([]float64, error) {
	parts := strings.Split(s, ",")
	if len(parts) != n {
		return nil, fmt.Errorf("want %d numbers", n)
	}
	out := make([]float64, n)
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func round2(v float64) float64 { return float64(int64(v*100+0.5*sign(v))) / 100 }

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}
