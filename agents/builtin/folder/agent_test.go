package folder_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/folder"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

func setup(t *testing.T, n int) (*resolvers.ObjectStore, []string) {
	t.Helper()
	store := resolvers.NewObjectStore(bustest.Start(t).Provision(t).Files)
	var ids []string
	for i := range n {
		ref, err := store.Store(context.Background(), strings.NewReader(strings.Repeat("x", i+1)), "text/plain", map[string]string{"filename": "f.txt", "tags": "keep"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
	}
	return store, ids
}

func organise(t *testing.T, a *folder.Agent, categories map[string][]string) (schemas.AgentResult, schemas.FolderResult) {
	t.Helper()
	ec := schemas.NewExecutionContext(nil)
	if err := ec.Write("categories", schemas.Categorization{Categories: categories, Method: "features"}, schemas.TypeCategorization, "test"); err != nil {
		t.Fatal(err)
	}
	res, err := a.Execute(context.Background(), ec)
	if err != nil {
		t.Fatal(err)
	}
	var fr schemas.FolderResult
	if res.Success {
		if err := res.Outputs["folders"].Decode(&fr); err != nil {
			t.Fatal(err)
		}
	}
	return res, fr
}

func TestFolderIsIdempotent(t *testing.T) {
	store, ids := setup(t, 4)
	a, err := folder.New(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Contract().Validate(); err != nil {
		t.Fatal(err)
	}
	cats := map[string][]string{"sunset": {ids[0], ids[1]}, "forest": {ids[2], ids[1]}, "other": {ids[3]}}

	res, fr := organise(t, a, cats)
	if !res.Success || fr.Moved != 4 {
		t.Fatalf("first run: moved %d: %+v", fr.Moved, res)
	}
	// ids[1] is under two categories: the first by name (forest) wins.
	want := map[string]string{ids[0]: "sunset", ids[1]: "forest", ids[2]: "forest", ids[3]: "other"}
	for id, f := range want {
		ref, err := store.ResolveMetadata(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if ref.Metadata["folder"] != f || ref.Metadata["tags"] != "keep" {
			t.Errorf("%s metadata %v, want folder %s and the tags kept", id, ref.Metadata, f)
		}
	}
	if len(fr.Folders["forest"]) != 2 || len(fr.Folders["sunset"]) != 1 {
		t.Errorf("folders %v", fr.Folders)
	}
	for _, s := range []string{"organised 4 files into 3 folders (forest 2, other 1, sunset 1); moved 4", "several categories"} {
		if !strings.Contains(res.Summary, s) {
			t.Errorf("summary lacks %q: %s", s, res.Summary)
		}
	}

	res, fr = organise(t, a, cats)
	if !res.Success || fr.Moved != 0 || !strings.Contains(res.Summary, "moved 0") {
		t.Errorf("second run: moved %d, %s", fr.Moved, res.Summary)
	}

	// Re-categorised, one file moves.
	res, fr = organise(t, a, map[string][]string{"sunset": {ids[0], ids[2]}})
	if fr.Moved != 1 {
		t.Errorf("recategorised: moved %d, %s", fr.Moved, res.Summary)
	}
}

func TestFolderBadInputs(t *testing.T) {
	store, ids := setup(t, 1)
	a, _ := folder.New(store)

	// Bad folder names fail the whole task before anything changes.
	res, _ := organise(t, a, map[string][]string{"../../etc": {ids[0]}, "a/b": {ids[0]}, "ok": {ids[0]}})
	if res.Success || res.Error.Code != schemas.CodeInvalidInput ||
		!strings.Contains(res.Error.Message, `"../../etc" contains a path separator`) || !strings.Contains(res.Error.Message, `"a/b"`) {
		t.Errorf("bad names: %+v", res)
	}
	ref, _ := store.ResolveMetadata(context.Background(), ids[0])
	if _, moved := ref.Metadata["folder"]; moved {
		t.Errorf("a file moved despite the failure: %v", ref.Metadata)
	}

	// Missing files are skipped and named; all missing fails.
	res, fr := organise(t, a, map[string][]string{"x": {ids[0], "f-gone"}})
	if !res.Success || fr.Moved != 1 || !strings.Contains(res.Summary, `skipped 1: f-gone: file not found`) {
		t.Errorf("one missing: %+v", res)
	}
	res, _ = organise(t, a, map[string][]string{"x": {"f-gone"}})
	if res.Success || res.Error.Code != schemas.CodeNotFound || !strings.Contains(res.Error.Message, "f-gone") {
		t.Errorf("all missing: %+v", res)
	}
	res, err := a.Execute(context.Background(), schemas.NewExecutionContext(nil))
	if err != nil || res.Success || !strings.Contains(res.Error.Message, `input "categories"`) {
		t.Errorf("no input: %+v, %v", res, err)
	}
}

func TestCheckFolderName(t *testing.T) {
	for _, name := range []string{"sunset", "golden hour", "Été 2024", "night-city_2"} {
		if err := folder.CheckFolderName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", ".", "..", "a/b", `a\b`, " lead", "nul\x00", "tab\there", strings.Repeat("x", 65)} {
		if err := folder.CheckFolderName(name); !errors.Is(err, folder.ErrBadFolderName) {
			t.Errorf("%q accepted: %v", name, err)
		}
	}
}

// With require_approval the agent answers approval_required with its plan
// and changes nothing; with approved too it files as usual.
func TestFolderAsksForApproval(t *testing.T) {
	store, ids := setup(t, 3)
	a, err := folder.New(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Contract().ValidateParams(map[string]any{"require_approval": "yes"}); err == nil {
		t.Error("require_approval \"yes\" passed the params schema; want a boolean")
	}
	cats := map[string][]string{"sky": {ids[0], ids[1]}, "sea": {ids[2]}}
	run := func(params map[string]any) schemas.AgentResult {
		ec := schemas.NewExecutionContext(nil)
		if err := ec.Write("categories", schemas.Categorization{Categories: cats, Method: "test"}, schemas.TypeCategorization, "test"); err != nil {
			t.Fatal(err)
		}
		ec.SetParams(params)
		res, err := a.Execute(context.Background(), ec)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run(map[string]any{"require_approval": true})
	if res.Success || res.Error.Code != schemas.CodeApprovalRequired || res.Error.Message != "move 3 files into 2 folders (sea 1, sky 2)?" {
		t.Fatalf("result %+v %+v; want approval_required with the plan", res, res.Error)
	}
	for _, id := range ids {
		if ref, _ := store.ResolveMetadata(context.Background(), id); ref.Metadata[resolvers.MetaFolder] != "" {
			t.Fatalf("%s moved to %q before the approval", id, ref.Metadata[resolvers.MetaFolder])
		}
	}
	if res := run(map[string]any{"require_approval": true, "approved": true}); !res.Success || !strings.Contains(res.Summary, "moved 3") {
		t.Fatalf("approved: %+v", res)
	}
	// Once filed, nothing would move: nothing to approve.
	if res := run(map[string]any{"require_approval": true}); !res.Success || !strings.Contains(res.Summary, "moved 0") {
		t.Errorf("asked again with nothing to move: %+v %+v", res, res.Error)
	}
}
