package gateway

// This file is a placeholder owned by the dashboard (branch ui18), which
// replaces it with the layout done by a graph layout library. It lays the
// DAG out in rows by wave so the endpoint answers meanwhile.

import "github.com/agentmesh/agentmesh/orchestrator/state"

// Graph is a run's DAG laid out for drawing.
type Graph struct {
	Nodes  []GraphNode `json:"nodes"`
	Edges  []GraphEdge `json:"edges"`
	Width  float64     `json:"width"`
	Height float64     `json:"height"`
}

// GraphNode is one step, placed.
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

// GraphEdge is one dependency, from parent to child, as a polyline.
type GraphEdge struct {
	From   string       `json:"from"`
	To     string       `json:"to"`
	Points [][2]float64 `json:"points"`
}

// layoutRun places each wave on a row, its steps side by side.
func layoutRun(run *state.RunState) (Graph, error) {
	const w, h, gapX, gapY = 160.0, 48.0, 40.0, 60.0
	g := Graph{Nodes: []GraphNode{}, Edges: []GraphEdge{}}
	pos := map[string]GraphNode{}
	for wi, wave := range run.Waves {
		for i, id := range wave {
			n := GraphNode{ID: id, Kind: "agent", Wave: wi, X: gapX + float64(i)*(w+gapX), Y: gapY + float64(wi)*(h+gapY), W: w, H: h, State: "pending"}
			if st, ok := run.Steps[id]; ok {
				n.Agent, n.State = st.Agent, st.Status
			}
			for _, s := range run.Spec.Steps {
				if s.ID == id && s.Kind != "" {
					n.Kind = s.Kind
				}
			}
			pos[id] = n
			g.Nodes = append(g.Nodes, n)
			g.Width = max(g.Width, n.X+w+gapX)
			g.Height = max(g.Height, n.Y+h+gapY)
		}
	}
	for _, s := range run.Spec.Steps {
		for _, p := range s.DependsOn {
			from, to := pos[p], pos[s.ID]
			g.Edges = append(g.Edges, GraphEdge{From: p, To: s.ID, Points: [][2]float64{{from.X + w/2, from.Y + h}, {to.X + w/2, to.Y}}})
		}
	}
	return g, nil
}
