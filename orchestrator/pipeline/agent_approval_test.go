package pipeline_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents/builtin/folder"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// folderRun starts the FolderAgent with two stored files and submits a
// run filing them into "cats" with require_approval; it returns the mesh,
// the store, the ids, the orchestrator and the run's events once its step
// waits.
func folderRun(t *testing.T, runID string) (*meshtest.Mesh, *resolvers.ObjectStore, []string, *orchestrator.Orchestrator, <-chan bus.Event) {
	t.Helper()
	m := meshtest.New(t)
	store := resolvers.NewObjectStore(m.Res.Files)
	var ids []string
	for _, s := range []string{"a", "bb"} {
		ref, err := store.Store(context.Background(), strings.NewReader(s), "text/plain", map[string]string{"filename": s + ".txt"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
	}
	a, err := folder.New(store)
	if err != nil {
		t.Fatal(err)
	}
	m.Run(t, a)
	o := m.Orchestrator(t, []string{folder.Name}, orchestrator.WithSweepInterval(100*time.Millisecond))
	spec := client.NewPipeline("file-with-approval").
		SeedValue("cats", schemas.TypeCategorization, "", schemas.Categorization{Categories: map[string][]string{"cats": ids}, Method: "test"}).
		Step("organise", folder.Name).Input("categories", "seed.cats").Param("require_approval", true).
		MustBuild()
	events := m.Events(t, runID)
	m.Submit(t, spec, runID)
	ev := waitFor(t, events, "organise", bus.TypeStepWaiting)
	if err := schemas.ValidateJSON(schemas.SchemaStepEvent, ev.Data); err != nil {
		t.Errorf("waiting event: %v", err)
	}
	var se schemas.StepEvent
	if err := ev.DataAs(&se); err != nil {
		t.Fatal(err)
	}
	if want := "approval: move 2 files into 1 folder (cats 2)?"; se.Reason != want {
		t.Errorf("waiting reason %q, want %q", se.Reason, want)
	}
	r, err := o.Store().Run(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if st := r.Steps["organise"]; st.Status != schemas.StepWaiting {
		t.Errorf("step organise is %s, want waiting", st.Status)
	}
	return m, store, ids, o, events
}

// folders returns the folder of each file.
func folders(t *testing.T, store *resolvers.ObjectStore, ids []string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		ref, err := store.ResolveMetadata(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ref.Metadata[resolvers.MetaFolder])
	}
	return out
}

// FolderAgent with require_approval makes its pipeline step wait; approved,
// the files move and the step completes with who approved.
func TestFolderAgentApprovalApproved(t *testing.T) {
	m, store, ids, o, _ := folderRun(t, "fold-ok")
	if got := folders(t, store, ids); got[0] != "" || got[1] != "" {
		t.Fatalf("files moved before the approval: %v", got)
	}
	resolve(t, m, pipelinespec.Resolution{RunID: "fold-ok", Step: "organise", Decision: pipelinespec.DecisionApprove, By: "ann"})
	done := meshtest.WaitRun(t, o.Store(), "fold-ok", 10*time.Second)
	if done.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", done.Status, done.Error)
	}
	st := done.Steps["organise"]
	if !strings.HasPrefix(st.Summary, "approved by ann; organised 2 files") || st.Attempt != 2 {
		t.Errorf("step: attempt %d, summary %q", st.Attempt, st.Summary)
	}
	if got := folders(t, store, ids); got[0] != "cats" || got[1] != "cats" {
		t.Errorf("folders after the approval: %v", got)
	}
}

// Rejected, the step fails with code rejected and no file moves; an answer
// to a step that did not ask is refused.
func TestFolderAgentApprovalRejected(t *testing.T) {
	m, store, ids, o, events := folderRun(t, "fold-no")
	resolve(t, m, pipelinespec.Resolution{RunID: "fold-no", Step: "organise", Decision: pipelinespec.DecisionReject, By: "bob", Comment: "not now"})
	done := meshtest.WaitRun(t, o.Store(), "fold-no", 10*time.Second)
	st := done.Steps["organise"]
	if done.Status != schemas.RunFailed || st.Code != schemas.CodeRejected || st.Error != "rejected by bob: not now" {
		t.Fatalf("run %s, step %s %s %q", done.Status, st.Status, st.Code, st.Error)
	}
	if got := folders(t, store, ids); got[0] != "" || got[1] != "" {
		t.Errorf("a rejected plan moved files: %v", got)
	}
	again := resolve(t, m, pipelinespec.Resolution{RunID: "fold-no", Step: "organise", Decision: pipelinespec.DecisionApprove})
	refusal(t, events, again, schemas.CodeNotWaiting, "the run has ended")
}
