package orchestrator_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/pipelinespec"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

func organizeAgent(t testing.TB, m *meshtest.Mesh, seen chan<- []string) {
	m.Agent(t, schemas.AgentContract{Name: "OrganizerAgent", Capability: schemas.CapOrganization, Description: "folders",
		Inputs: []schemas.TypedInput{fixture.FilesIn("images", schemas.ContentImages, true),
			{Name: "categories", DataType: schemas.TypeCategorization, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "folders", DataType: schemas.TypeFolderResult}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			fc, err := ec.Files("images")
			if err != nil {
				return schemas.AgentResult{}, err
			}
			tv, err := ec.Read("categories", schemas.TypeCategorization)
			if err != nil {
				return schemas.AgentResult{}, err
			}
			var cat schemas.Categorization
			if err := tv.Decode(&cat); err != nil {
				return schemas.AgentResult{}, err
			}
			if seen != nil {
				seen <- fc.IDs()
			}
			return fixture.OK("OrganizerAgent", "organised", map[string]schemas.TypedValue{
				"folders": fixture.MustValue(t, schemas.TypeFolderResult, schemas.FolderResult{Folders: cat.Categories, Moved: fc.Count()}, ""),
			}), nil
		}, 4)
}

func TestThreeStepPipelineRoutesOutputsIntoSlots(t *testing.T) {
	m := meshtest.New(t)
	seen := make(chan []string, 1)
	m.SearchAgent(t, nil)
	m.AnalysisAgent(t)
	organizeAgent(t, m, seen)
	o := m.Orchestrator(t, []string{"ImageSearchAgent", "AnalysisAgent", "OrganizerAgent"})

	spec := client.NewPipeline("sunsets").
		Step("search", "ImageSearchAgent").Param("query", "sunset").
		Then("analyze", "AnalysisAgent").
		Then("organize", "OrganizerAgent").After("search").
		MustBuild()
	id := m.Submit(t, spec, "three-step")
	run := meshtest.WaitRun(t, o.Store(), id, 20*time.Second)
	if run.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	if got, want := run.Waves, [][]string{{"search"}, {"analyze"}, {"organize"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("waves %v, want %v", got, want)
	}
	want := []string{"sunset-1", "sunset-2", "sunset-3"}
	if got := <-seen; !slices.Equal(got, want) {
		t.Errorf("organizer got images %v, want %v", got, want)
	}
	slots := run.State.Slots
	images, err := slots[route.SlotImageIDs].Files()
	if err != nil || !slices.Equal(images.IDs(), want) || slots[route.SlotImageIDs].Source != "ImageSearchAgent" {
		t.Errorf("slot %s = %+v (%v), want %v from ImageSearchAgent", route.SlotImageIDs, slots[route.SlotImageIDs], err, want)
	}
	if v := slots[route.SlotAnalysis]; v.DataType != schemas.TypeAnalysisResult || v.Source != "AnalysisAgent" {
		t.Errorf("slot %s = %+v, want ANALYSIS_RESULT from AnalysisAgent", route.SlotAnalysis, v)
	}
	if v := slots[route.SlotCategorization]; v.DataType != schemas.TypeCategorization || v.Source != "AnalysisAgent" {
		t.Errorf("slot %s = %+v, want CATEGORIZATION from AnalysisAgent", route.SlotCategorization, v)
	}
	for name, v := range slots {
		if v.DataType == schemas.TypeFolderResult {
			t.Errorf("FOLDER_RESULT routed into slot %s; it belongs in history only", name)
		}
	}
	var folder bool
	for _, h := range run.State.History {
		if v, ok := h.Outputs["folders"]; ok && v.DataType == schemas.TypeFolderResult && h.Agent == "OrganizerAgent" {
			folder = true
		}
	}
	if !folder {
		t.Errorf("FOLDER_RESULT not kept in history: %+v", run.State.History)
	}
	for _, s := range []string{"search", "analyze", "organize"} {
		st := run.Steps[s]
		if st.Status != schemas.StepCompleted || st.TaskID != pipelinespec.StepTaskID(id, s, 1, meshtest.Nonce(t, o, id)) || st.FinishedAt.Before(st.DispatchedAt) {
			t.Errorf("step %s = %+v", s, st)
		}
	}
}

func TestDiamondRunsParallelWaveAndMergesFanIn(t *testing.T) {
	m := meshtest.New(t)
	m.SearchAgent(t, nil)
	var runs fixture.Counter
	variant := func(name, suffix string) {
		m.Agent(t, schemas.AgentContract{Name: name, Capability: schemas.CapTransformation, Description: "variants",
			Inputs:  []schemas.TypedInput{fixture.FilesIn("images", schemas.ContentImages, true)},
			Outputs: []schemas.TypedOutput{fixture.FilesOut("images", schemas.ContentImages, true)}},
			func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
				runs.Add(name)
				fc, err := ec.Files("images")
				if err != nil {
					return schemas.AgentResult{}, err
				}
				time.Sleep(300 * time.Millisecond) // long enough that B and C must overlap to finish together
				var ids []string
				for _, id := range fc.IDs() {
					ids = append(ids, id+suffix)
				}
				ids = append(ids, fc.IDs()[0]) // shared ID: the merge keeps it once
				return fixture.OK(name, "", map[string]schemas.TypedValue{"images": schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, ids...), "")}), nil
			}, 2)
	}
	variant("BAgent", "-b")
	variant("CAgent", "-c")
	got := make(chan []string, 1)
	m.Agent(t, schemas.AgentContract{Name: "DAgent", Capability: schemas.CapEvaluation, Description: "joins",
		Inputs: []schemas.TypedInput{fixture.FilesIn("images", schemas.ContentImages, true)}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			fc, err := ec.Files("images")
			if err != nil {
				return schemas.AgentResult{}, err
			}
			got <- fc.IDs()
			return fixture.OK("DAgent", "joined", nil), nil
		}, 1)
	o := m.Orchestrator(t, []string{"ImageSearchAgent", "BAgent", "CAgent", "DAgent"})

	spec := client.NewPipeline("diamond").
		Step("a", "ImageSearchAgent").Param("query", "x").
		Then("b", "BAgent").
		Step("c", "CAgent").After("a").
		Step("d", "DAgent").After("b", "c").
		MustBuild()
	run := meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, "diamond"), 20*time.Second)
	if run.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	b, c := run.Steps["b"], run.Steps["c"]
	if b.Wave != 1 || c.Wave != 1 || run.Steps["d"].Wave != 2 {
		t.Errorf("waves: b %d, c %d, d %d; want 1, 1, 2", b.Wave, c.Wave, run.Steps["d"].Wave)
	}
	if !(b.DispatchedAt.Before(c.FinishedAt) && c.DispatchedAt.Before(b.FinishedAt)) {
		t.Errorf("b [%s, %s] and c [%s, %s] did not overlap", b.DispatchedAt, b.FinishedAt, c.DispatchedAt, c.FinishedAt)
	}
	want := []string{"x-1-b", "x-2-b", "x-3-b", "x-1", "x-1-c", "x-2-c", "x-3-c"}
	if ids := <-got; !slices.Equal(ids, want) {
		t.Errorf("d got %v, want the merge %v", ids, want)
	}
}

func TestNonMergeableFanInRejectedBeforeAnythingRuns(t *testing.T) {
	m := meshtest.New(t)
	var runs fixture.Counter
	m.SearchAgent(t, &runs)
	for _, name := range []string{"BAgent", "CAgent"} {
		name := name
		m.Agent(t, schemas.AgentContract{Name: name, Capability: schemas.CapAnalysis, Description: "analyses",
			Inputs:  []schemas.TypedInput{fixture.FilesIn("images", schemas.ContentImages, true)},
			Outputs: []schemas.TypedOutput{{Name: "analysis", DataType: schemas.TypeAnalysisResult}}},
			func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
				runs.Add(name)
				return fixture.OK(name, "", nil), nil
			}, 1)
	}
	m.Agent(t, schemas.AgentContract{Name: "DAgent", Capability: schemas.CapEvaluation, Description: "joins",
		Inputs: []schemas.TypedInput{{Name: "analysis", DataType: schemas.TypeAnalysisResult, Required: true}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			runs.Add("DAgent")
			return fixture.OK("DAgent", "", nil), nil
		}, 1)
	o := m.Orchestrator(t, []string{"ImageSearchAgent", "BAgent", "CAgent", "DAgent"})

	events := m.Events(t, "bad-diamond")
	spec := client.NewPipeline("bad-diamond").
		Step("a", "ImageSearchAgent").Param("query", "x").
		Then("b", "BAgent").
		Step("c", "CAgent").After("a").
		Step("d", "DAgent").After("b", "c").
		MustBuild()
	run := meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, "bad-diamond"), 10*time.Second)
	if run.Status != schemas.RunFailed {
		t.Fatalf("run %s, want failed", run.Status)
	}
	for _, want := range []string{`"b"`, `"c"`, schemas.TypeAnalysisResult, "not mergeable"} {
		if !strings.Contains(run.Error, want) {
			t.Errorf("error %q does not name %s", run.Error, want)
		}
	}
	for _, st := range run.Steps {
		if st.Status != schemas.StepPending || st.TaskID != "" {
			t.Errorf("step %s was touched: %+v", st.ID, st)
		}
	}
	ev := <-events
	if ev.Type != bus.TypePipelineCompleted || !strings.Contains(string(ev.Data), "not mergeable") {
		t.Errorf("event %s %s, want pipeline.completed with the error", ev.Type, ev.Data)
	}
	if n := runs.Snapshot(); len(n) != 0 {
		t.Errorf("agents ran: %v", n)
	}
}
