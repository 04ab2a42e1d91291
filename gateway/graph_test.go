package gateway

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// specOf makes a pipeline spec of steps in order with the given parents.
func specOf(t *testing.T, deps map[string][]string, order ...string) pipelinespec.PipelineSpec {
	t.Helper()
	var spec pipelinespec.PipelineSpec
	for _, id := range order {
		spec.Steps = append(spec.Steps, pipelinespec.PipelineStep{ID: id, Agent: "Agent" + id, DependsOn: deps[id]})
	}
	return spec
}

func TestLayoutPlacesWavesTopToBottomWithoutOverlap(t *testing.T) {
	ctx := context.Background()
	wide := map[string][]string{}
	var wideOrder []string
	wideOrder = append(wideOrder, "src")
	for i := range 12 {
		id := fmt.Sprintf("w%02d", i)
		wide[id] = []string{"src"}
		wideOrder = append(wideOrder, id)
	}
	for i := range 12 {
		wide["sink"] = append(wide["sink"], fmt.Sprintf("w%02d", i))
	}
	wideOrder = append(wideOrder, "sink")
	cases := []struct {
		name  string
		deps  map[string][]string
		order []string
	}{
		{"one step", nil, []string{"only"}},
		{"sunsets chain", map[string][]string{"analyze": {"search"}, "organize": {"analyze"}}, []string{"search", "analyze", "organize"}},
		{"diamond", map[string][]string{"b": {"a"}, "c": {"a"}, "d": {"b", "c"}}, []string{"a", "b", "c", "d"}},
		// a root that only feeds the last wave stays in wave 0, on top
		{"late consumer of a root", map[string][]string{"b": {"a"}, "c": {"b"}, "d": {"c", "lonely"}}, []string{"a", "b", "c", "lonely", "d"}},
		{"independent roots", nil, []string{"x", "y", "z"}},
		{"fan out and in", wide, wideOrder},
		{"unknown parent left out", map[string][]string{"b": {"a", "ghost"}}, []string{"a", "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := specOf(t, tc.deps, tc.order...)
			waves, err := pipelinespec.Waves(spec)
			if err != nil {
				t.Fatal(err)
			}
			run := &state.RunState{Spec: spec, Waves: waves, Steps: map[string]*state.StepState{}}
			g, err := LayoutRun(ctx, run)
			if err != nil {
				t.Fatal(err)
			}
			checkLayout(t, spec, waves, g)
		})
	}
}

// checkLayout asserts what a reader of the drawing relies on: every step
// placed once inside the drawing, a wave's steps on one row below the
// previous wave's, no two boxes overlapping, and every known depends_on
// edge drawn from its parent's box to its child's.
func checkLayout(t *testing.T, spec pipelinespec.PipelineSpec, waves [][]string, g *Graph) {
	t.Helper()
	byID := map[string]GraphNode{}
	for _, n := range g.Nodes {
		if _, dup := byID[n.ID]; dup {
			t.Errorf("step %q placed twice", n.ID)
		}
		byID[n.ID] = n
		if n.X < -0.01 || n.Y < -0.01 || n.X+n.W > g.Width+0.01 || n.Y+n.H > g.Height+0.01 {
			t.Errorf("step %q at (%v,%v %vx%v) outside the %vx%v drawing", n.ID, n.X, n.Y, n.W, n.H, g.Width, g.Height)
		}
		if n.State != schemas.StepPending || n.Kind != pipelinespec.StepKindAgent || n.Agent != "Agent"+n.ID {
			t.Errorf("step %q: state %q kind %q agent %q", n.ID, n.State, n.Kind, n.Agent)
		}
	}
	if len(byID) != len(spec.Steps) {
		t.Fatalf("placed %d steps, spec has %d", len(byID), len(spec.Steps))
	}
	var prevBottom = math.Inf(-1)
	for w, ids := range waves {
		top := byID[ids[0]].Y
		for _, id := range ids {
			n := byID[id]
			if n.Wave != w {
				t.Errorf("step %q: wave %d, want %d", id, n.Wave, w)
			}
			if math.Abs(n.Y-top) > 0.01 {
				t.Errorf("wave %d: step %q at y=%v, %q at y=%v; a wave is one row", w, id, n.Y, ids[0], top)
			}
			if n.Y <= prevBottom {
				t.Errorf("wave %d: step %q at y=%v is not below wave %d (bottom %v)", w, id, n.Y, w-1, prevBottom)
			}
		}
		prevBottom = top + byID[ids[0]].H
	}
	for i, a := range g.Nodes {
		for _, b := range g.Nodes[i+1:] {
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				t.Errorf("steps %q and %q overlap: %+v %+v", a.ID, b.ID, a, b)
			}
		}
	}
	want := 0
	for _, s := range spec.Steps {
		for i, d := range s.DependsOn {
			if _, ok := byID[d]; ok && d != s.ID && !slices.Contains(s.DependsOn[:i], d) {
				want++
			}
		}
	}
	if len(g.Edges) != want {
		t.Errorf("%d edges drawn, want %d", len(g.Edges), want)
	}
	for _, e := range g.Edges {
		from, to := byID[e.From], byID[e.To]
		start, end := e.Points[0], e.Points[len(e.Points)-1]
		if e.Arrow != nil {
			end = *e.Arrow
		}
		if !near(from, start) || !near(to, end) {
			t.Errorf("edge %s -> %s runs %v .. %v, not from box %+v to box %+v", e.From, e.To, start, end, from, to)
		}
	}
}

// near reports whether p is on or within 2 px of n's box.
func near(n GraphNode, p [2]float64) bool {
	const slack = 2
	return p[0] >= n.X-slack && p[0] <= n.X+n.W+slack && p[1] >= n.Y-slack && p[1] <= n.Y+n.H+slack
}

func TestLayoutRunCarriesStepStateAndKind(t *testing.T) {
	spec := pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{
		{ID: "search", Agent: "ImageSearchAgent"},
		{ID: "ok", Kind: pipelinespec.StepKindApproval, DependsOn: []string{"search"}},
		{ID: "organize", Agent: "FolderAgent", DependsOn: []string{"ok"}},
	}}
	waves, _ := pipelinespec.Waves(spec)
	run := &state.RunState{Spec: spec, Waves: waves, Steps: map[string]*state.StepState{
		"search": {ID: "search", Status: schemas.StepCompleted},
		"ok":     {ID: "ok", Status: schemas.StepWaiting},
	}}
	g, err := LayoutRun(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range g.Nodes {
		got[n.ID] = n.Kind + "/" + n.State
	}
	want := map[string]string{"search": "agent/completed", "ok": "approval/waiting", "organize": "agent/pending"}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("step %q: kind/state %q, want %q", id, got[id], w)
		}
	}
}

// Callers from many requests at once each get their own, whole graph.
func TestLayoutConcurrentCallers(t *testing.T) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			ids := []string{"a", "b", "c"}[:1+i%3]
			deps := map[string][]string{"b": {"a"}, "c": {"b"}}
			var steps []GraphStep
			for w, id := range ids {
				steps = append(steps, GraphStep{ID: id, Wave: w, Kind: pipelinespec.StepKindAgent, DependsOn: deps[id]})
			}
			g, err := Layout(ctx, steps)
			if err == nil && len(g.Nodes) != len(ids) {
				err = fmt.Errorf("caller %d: %d nodes, want %d", i, len(g.Nodes), len(ids))
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// The benchmarks lay out each time, past the layouts kept.
func BenchmarkLayoutSunsets(b *testing.B) {
	ctx := context.Background()
	steps := []GraphStep{
		{ID: "search", Agent: "ImageSearchAgent", Kind: "agent"},
		{ID: "analyze", Agent: "AnalysisAgent", Kind: "agent", Wave: 1, DependsOn: []string{"search"}},
		{ID: "organize", Agent: "FolderAgent", Kind: "agent", Wave: 2, DependsOn: []string{"analyze"}},
	}
	for b.Loop() {
		layered(ctx, steps)
	}
}

// BenchmarkLayoutDense lays out a pipeline of 20 steps each depending on
// every earlier one: 190 edges, 1,140 bends.
func BenchmarkLayoutDense(b *testing.B) {
	var steps []GraphStep
	for i := range 20 {
		s := GraphStep{ID: fmt.Sprintf("s%d", i), Kind: "agent", Wave: i}
		for j := range i {
			s.DependsOn = append(s.DependsOn, fmt.Sprintf("s%d", j))
		}
		steps = append(steps, s)
	}
	for b.Loop() {
		layered(context.Background(), steps)
	}
}

// FuzzLayout lays out pipelines of up to eight steps whose ids and
// depends_on edges come from the fuzzer (odd characters included): every
// acyclic one must be placed whole, wave by wave, without overlaps.
func FuzzLayout(f *testing.F) {
	f.Add("search analyze organize", []byte{1, 0, 2, 1})
	f.Add("a b c d", []byte{1, 0, 2, 0, 3, 1, 3, 2})
	f.Add(`x "q" a->b \n é`, []byte{1, 0, 1, 0, 4, 2, 3, 3})
	f.Fuzz(func(t *testing.T, names string, deps []byte) {
		var spec pipelinespec.PipelineSpec
		seen := map[string]bool{}
		for _, id := range strings.Fields(names) {
			if len(spec.Steps) == 8 || seen[id] || !utf8.ValidString(id) {
				continue
			}
			seen[id] = true
			spec.Steps = append(spec.Steps, pipelinespec.PipelineStep{ID: id, Agent: "Agent" + id})
		}
		if len(spec.Steps) == 0 {
			return
		}
		for i := 0; i+1 < len(deps) && i < 32; i += 2 {
			child, parent := int(deps[i])%len(spec.Steps), int(deps[i+1])%len(spec.Steps)
			if child != parent && !slices.Contains(spec.Steps[child].DependsOn, spec.Steps[parent].ID) {
				spec.Steps[child].DependsOn = append(spec.Steps[child].DependsOn, spec.Steps[parent].ID)
			}
		}
		waves, err := pipelinespec.Waves(spec)
		if err != nil {
			return // a cycle: validation refuses the pipeline before any run
		}
		g, err := LayoutRun(context.Background(), &state.RunState{Spec: spec, Waves: waves})
		if err != nil {
			t.Fatalf("steps %q: %v", names, err)
		}
		checkLayout(t, spec, waves, g)
	})
}

// A pipeline whose edges would bend more than maxBends times gets straight
// edges: still every step placed wave by wave, without overlaps, edges box
// to box.
func TestLayoutLargePipelineInRows(t *testing.T) {
	var spec pipelinespec.PipelineSpec
	for i := range 25 { // 300 edges
		s := pipelinespec.PipelineStep{ID: fmt.Sprintf("s%02d", i), Agent: fmt.Sprintf("Agents%02d", i)}
		for j := range i {
			s.DependsOn = append(s.DependsOn, fmt.Sprintf("s%02d", j))
		}
		spec.Steps = append(spec.Steps, s)
	}
	waves, err := pipelinespec.Waves(spec)
	if err != nil {
		t.Fatal(err)
	}
	run := &state.RunState{Spec: spec, Waves: waves}
	bends, wave := 0, map[string]int{}
	for _, s := range GraphSteps(run) {
		wave[s.ID] = s.Wave
		for _, d := range s.DependsOn {
			bends += s.Wave - wave[d] - 1 // a bend in each row the edge passes
		}
	}
	if bends <= maxBends {
		t.Fatalf("%d bends: not more than maxBends (%d)", bends, maxBends)
	}
	g, err := LayoutRun(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, spec, waves, g)
	for _, e := range g.Edges {
		if len(e.Points) != 4 || e.Arrow != nil {
			t.Fatalf("edge %s -> %s: %v, %v; want a straight one", e.From, e.To, e.Points, e.Arrow)
		}
	}
}

// A run's graph asked again after its steps changed state keeps its
// positions and shows the new states; the layout kept is not changed.
func TestLayoutKeptAcrossStates(t *testing.T) {
	steps := []GraphStep{
		{ID: "cache-a", Agent: "A", Kind: "agent", State: schemas.StepRunning},
		{ID: "cache-b", Agent: "B", Kind: "agent", Wave: 1, State: schemas.StepPending, DependsOn: []string{"cache-a"}},
	}
	first, err := Layout(context.Background(), steps)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := layoutCache.get(layoutKey(steps)); !ok {
		t.Fatal("the layout was not kept")
	}
	steps[0].State, steps[1].State = schemas.StepCompleted, schemas.StepRunning
	second, err := Layout(context.Background(), steps)
	if err != nil {
		t.Fatal(err)
	}
	for i := range second.Nodes {
		a, b := first.Nodes[i], second.Nodes[i]
		if a.X != b.X || a.Y != b.Y {
			t.Errorf("step %s moved: %+v then %+v", a.ID, a, b)
		}
		if b.State != steps[i].State {
			t.Errorf("step %s: state %q, want %q", b.ID, b.State, steps[i].State)
		}
	}
	if first.Nodes[0].State != schemas.StepRunning {
		t.Errorf("the first answer changed under its reader: %+v", first.Nodes[0])
	}
	// a changed pipeline is laid out anew
	steps[1].DependsOn = nil
	if layoutKey(steps) == layoutKey(steps[:1]) {
		t.Error("different pipelines share a key")
	}
}

// Edges that skip waves bend around the boxes of the rows they pass, not
// through them: no point of any edge's spline is inside a box other than
// its ends'.
func TestLayoutRoutesEdgesAroundBoxes(t *testing.T) {
	for name, deps := range map[string]map[string][]string{
		"late consumer of a root": {"b": {"a"}, "c": {"b"}, "d": {"c", "lonely"}},
		"skips": {"fetch": {"plan"}, "parse": {"fetch"}, "summarize": {"parse", "plan"},
			"review": {"summarize", "fetch"}, "notify": {"review"}, "audit": {"plan"}},
	} {
		t.Run(name, func(t *testing.T) {
			var order []string
			for id := range deps {
				order = append(order, id)
				for _, d := range deps[id] {
					if deps[d] == nil && !slices.Contains(order, d) {
						order = append(order, d)
					}
				}
			}
			slices.Sort(order)
			spec := specOf(t, deps, order...)
			waves, err := pipelinespec.Waves(spec)
			if err != nil {
				t.Fatal(err)
			}
			g, err := LayoutRun(context.Background(), &state.RunState{Spec: spec, Waves: waves})
			if err != nil {
				t.Fatal(err)
			}
			checkLayout(t, spec, waves, g)
			for _, e := range g.Edges {
				for i := 0; i+3 < len(e.Points); i += 3 {
					p0, p1, p2, p3 := e.Points[i], e.Points[i+1], e.Points[i+2], e.Points[i+3]
					for k := range 21 {
						u := float64(k) / 20
						at := func(j int) float64 {
							return (1-u)*(1-u)*(1-u)*p0[j] + 3*(1-u)*(1-u)*u*p1[j] + 3*(1-u)*u*u*p2[j] + u*u*u*p3[j]
						}
						x, y := at(0), at(1)
						for _, n := range g.Nodes {
							if n.ID != e.From && n.ID != e.To && x > n.X+1 && x < n.X+n.W-1 && y > n.Y+1 && y < n.Y+n.H-1 {
								t.Errorf("edge %s -> %s passes through box %s at (%.1f, %.1f)", e.From, e.To, n.ID, x, y)
							}
						}
					}
				}
			}
		})
	}
}
