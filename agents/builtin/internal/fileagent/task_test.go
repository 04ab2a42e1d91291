package fileagent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

var contract = schemas.AgentContract{
	Name:       "TestAgent",
	Capability: schemas.CapAnalysis,
	Inputs: []schemas.TypedInput{
		{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages, Required: true},
		{Name: "scope", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages},
		{Name: "categories", DataType: schemas.TypeCategorization, Required: true},
	},
	Outputs: []schemas.TypedOutput{{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages}},
}

// failed runs Abort on err and returns the failed result's error.
func failed(t *testing.T, task *fileagent.Task, err error) *schemas.ResultError {
	t.Helper()
	res, rerr := task.Abort(err)
	if rerr != nil || res.Success || res.Error == nil {
		t.Fatalf("Abort(%v) = %+v, %v; want a failed result", err, res, rerr)
	}
	if res.Agent != contract.Name {
		t.Errorf("failed result of agent %q; want %q", res.Agent, contract.Name)
	}
	return res.Error
}

func TestInputFailures(t *testing.T) {
	ec := schemas.NewExecutionContext(nil)
	if err := ec.Put("scope", schemas.TextValue("not files", "test")); err != nil {
		t.Fatal(err)
	}
	task := fileagent.Start(contract)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"required files missing", func() error { _, err := task.Files(ec, "images"); return err }(), `input "images" (FILE_IDS of images) is required: `},
		{"optional files of another type", func() error { _, err := task.Files(ec, "scope"); return err }(), `input "scope": `},
		{"required value missing", task.Decode(ec, "categories", &schemas.Categorization{}), `input "categories" (CATEGORIZATION) is required: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := failed(t, task, tt.err)
			if e.Code != schemas.CodeInvalidInput || !strings.HasPrefix(e.Message, tt.want) || e.Retryable {
				t.Errorf("failure %+v; want code %s, not retryable, message starting %q", e, schemas.CodeInvalidInput, tt.want)
			}
		})
	}
	if err := ec.Put("images", schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, "f-1", "f-2"), "test")); err != nil {
		t.Fatal(err)
	}
	ids, err := task.Files(ec, "images")
	if err != nil || strings.Join(ids, ",") != "f-1,f-2" {
		t.Errorf("Files = %v, %v; want [f-1 f-2]", ids, err)
	}
}

// Abort turns the package's failures into results and hands every other
// error back as Execute's error.
func TestAbort(t *testing.T) {
	task := fileagent.Start(contract)
	if res, err := task.Abort(context.Canceled); !errors.Is(err, context.Canceled) || res.Error != nil {
		t.Errorf("Abort(context.Canceled) = %+v, %v; want the error back", res, err)
	}
	if e := failed(t, task, fileagent.Failf(schemas.CodeNotFound, "no %s", "luck")); e.Code != schemas.CodeNotFound || e.Message != "no luck" {
		t.Errorf("Failf: %+v", e)
	}
}

func TestDoneNamesWhatWasSkipped(t *testing.T) {
	tests := []struct {
		skipping string
		skips    []string
		want     string
	}{
		{"", nil, "did it"},
		{"", []string{"a: gone", "b: broken"}, "did it; skipped 2: a: gone; b: broken"},
		{"scope ids", []string{`"x": gone`}, `did it; skipped 1 scope id: "x": gone`},
		{"scope ids", []string{`"x": gone`, `"y": gone`}, `did it; skipped 2 scope ids: "x": gone; "y": gone`},
	}
	for _, tt := range tests {
		task := fileagent.Start(contract)
		task.Skipping = tt.skipping
		for _, s := range tt.skips {
			task.Skip("%s", s)
		}
		res, err := task.Done("did it", nil, schemas.Usage{Tokens: schemas.Tokens{Prompt: 3}, Cost: 0.5, ModelMS: 9})
		if err != nil || !res.Success || res.Summary != tt.want || res.Agent != contract.Name ||
			res.Capability != contract.Capability || res.Metrics.Tokens.Prompt != 3 || res.Metrics.Cost != 0.5 || res.Metrics.ModelMS != 9 {
			t.Errorf("Done with skips %q = %+v, %v; want summary %q", tt.skips, res, err, tt.want)
		}
	}
}

func TestFailAllAndSkipError(t *testing.T) {
	task := fileagent.Start(contract)
	if err := task.SkipError(context.Background(), "f-1", resolvers.ErrNotFound); err != nil {
		t.Fatal(err)
	}
	task.Skip("f-2 (x.txt) has no text")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := task.SkipError(ctx, "f-3", errors.New("interrupted")); !errors.Is(err, context.Canceled) {
		t.Errorf("SkipError after the ctx ended = %v; want its error", err)
	}
	res, _ := task.FailAll(schemas.CodeInvalidInput, "files could be read")
	want := "none of the 2 files could be read: f-1: " + resolvers.ErrNotFound.Error() + "; f-2 (x.txt) has no text"
	if res.Error == nil || res.Error.Message != want {
		t.Errorf("FailAll = %+v; want message %q", res.Error, want)
	}
}

func TestIntParam(t *testing.T) {
	tests := []struct {
		value any // nil: not given
		want  int
		fail  string
	}{
		{nil, 20, ""},
		{7.0, 7, ""},
		{int64(3), 3, ""},
		{0.0, 0, "param limit 0 must be a whole number of at least 1"},
		{2.5, 0, "param limit 2.5 must be a whole number of at least 1"},
		{"ten", 0, "param limit ten (string) is not a number; give a whole number such as 20"},
	}
	for _, tt := range tests {
		ec := schemas.NewExecutionContext(nil)
		if tt.value != nil {
			ec.SetParams(map[string]any{"limit": tt.value})
		}
		task := fileagent.Start(contract)
		n, err := task.IntParam(ec, "limit", 20)
		if tt.fail == "" {
			if err != nil || n != tt.want {
				t.Errorf("limit %v: %d, %v; want %d", tt.value, n, err, tt.want)
			}
			continue
		}
		if e := failed(t, task, err); e.Code != schemas.CodeInvalidParams || e.Message != tt.fail {
			t.Errorf("limit %v: %+v; want %s %q", tt.value, e, schemas.CodeInvalidParams, tt.fail)
		}
	}
}

func TestNewNeedsAStore(t *testing.T) {
	type agent struct{ n int }
	inc := func(a *agent) { a.n++ }
	if _, err := fileagent.New[agent, resolvers.FileResolver]("analysis", nil, &agent{}); err == nil ||
		err.Error() != "analysis: New needs a file resolver (the object store resolver)" {
		t.Errorf("nil resolver: %v", err)
	}
	if _, err := fileagent.New[agent, resolvers.Catalog]("folder", nil, &agent{}); err == nil ||
		err.Error() != "folder: New needs a file catalog (the object store resolver)" {
		t.Errorf("nil catalog: %v", err)
	}
	dir, err := resolvers.NewLocalDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := fileagent.New("x", resolvers.FileResolver(dir), &agent{}, inc, inc)
	if err != nil || a.n != 2 {
		t.Errorf("New = %+v, %v; want both options applied", a, err)
	}
}
