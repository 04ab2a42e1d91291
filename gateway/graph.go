package gateway

import (
	"context"
	"fmt"

	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/pipelinespec"
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
)

// LayoutRun lays out run's pipeline with GraphSteps.
func LayoutRun(ctx context.Context, run *stateview.RunState) (*Graph, error) {
	return Layout(ctx, GraphSteps(run))
}

// GraphSteps reads the steps of run in spec order with their wave, kind and
// state (pending for a step the run has not reached).
func GraphSteps(run *stateview.RunState) []GraphStep {
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
			gs.Kind = pipelinespec.StepKindAgent
		}
		if st := run.Steps[s.ID]; st != nil && st.Status != "" {
			gs.State = st.Status
		}
		steps = append(steps, gs)
	}
	return steps
}

// Layout places steps top to bottom, one row per wave (layered): the
// steps of a wave share a row, so a wave is drawn below the one before it
// even when no edge joins them directly. Edges name parents by depends_on;
// one naming an unknown step is left out. Positions depend on the steps
// and edges only, so they are kept (see layoutCache) and a run's graph
// asked again as its steps change state is not laid out again. ctx bounds
// the ordering passes of a very large pipeline.
func Layout(ctx context.Context, steps []GraphStep) (*Graph, error) {
	key := layoutKey(steps)
	if g, ok := layoutCache.get(key); ok {
		return g.withStates(steps), nil
	}
	g := layered(ctx, steps)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("graph layout: %w", err)
	}
	layoutCache.put(key, g)
	return g.withStates(steps), nil
}

// nodeSize is the box of a step in CSS pixels: two lines, the step id and its
// agent (or kind).
func nodeSize(s GraphStep) (w, h float64) {
	label := max(len(s.ID), len(s.Agent), len(s.Kind))
	return round2(max(nodeMinWidth, float64(label)*charWidth+28)), nodeHeight
}

func round2(v float64) float64 { return float64(int64(v*100+0.5*sign(v))) / 100 }

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}
