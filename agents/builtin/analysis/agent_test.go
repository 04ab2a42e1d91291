package analysis_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/analysis"
	"github.com/agentmesh/agentmesh/agents/builtin/llmiface"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

func storeAll(t *testing.T) (*resolvers.ObjectStore, []string, map[string]string) {
	t.Helper()
	store := resolvers.NewObjectStore(bustest.Start(t).Provision(t).Files)
	var ids []string
	scenes := map[string]string{}
	for _, img := range samples.Images() {
		ref, err := store.Store(context.Background(), bytes.NewReader(img.Content), img.MediaType, img.Metadata())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
		scenes[ref.ID] = img.Scene
	}
	return store, ids, scenes
}

func execute(t *testing.T, a *analysis.Agent, ids ...string) (schemas.AgentResult, schemas.Categorization, schemas.AnalysisResult) {
	t.Helper()
	ec := schemas.NewExecutionContext(nil)
	if err := ec.Put("images", schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, ids...), "test")); err != nil {
		t.Fatal(err)
	}
	res, err := a.Execute(context.Background(), ec)
	if err != nil {
		t.Fatal(err)
	}
	var cat schemas.Categorization
	var ar schemas.AnalysisResult
	if res.Success {
		if err := res.Outputs["categories"].Decode(&cat); err != nil {
			t.Fatal(err)
		}
		if err := res.Outputs["analysis"].Decode(&ar); err != nil {
			t.Fatal(err)
		}
		reg := schemas.DefaultRegistry()
		for name, v := range res.Outputs {
			if err := reg.ValidateValue(analysis.Name, name, v); err != nil {
				t.Errorf("output %s: %v", name, err)
			}
		}
	}
	return res, cat, ar
}

// Warm-gradient sunsets end up together, apart from the green forests, and
// every sample lands in the category it was drawn as.
func TestAnalysisGroupsSunsetsApartFromForests(t *testing.T) {
	store, ids, scenes := storeAll(t)
	a, err := analysis.New(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Contract().Validate(); err != nil {
		t.Fatal(err)
	}
	res, cat, ar := execute(t, a, ids...)
	if !res.Success {
		t.Fatalf("failed: %+v", res.Error)
	}
	if cat.Method != analysis.MethodFeatures || ar.Method != analysis.MethodFeatures {
		t.Errorf("method %q / %q", cat.Method, ar.Method)
	}
	if !strings.HasPrefix(res.Summary, "categorised 17 images into 5 categories (method: features)") {
		t.Errorf("summary %q", res.Summary)
	}
	correct := 0
	for category, members := range cat.Categories {
		for _, id := range members {
			if scenes[id] == category {
				correct++
			} else {
				t.Errorf("%s image %s put under %q", scenes[id], id, category)
			}
		}
	}
	var sunsets, forests []string
	for _, id := range ids {
		switch scenes[id] {
		case samples.SceneSunset:
			sunsets = append(sunsets, id)
		case samples.SceneForest:
			forests = append(forests, id)
		}
	}
	if !slices.Equal(cat.Categories["sunset"], sunsets) {
		t.Errorf("sunset category %v, want %v", cat.Categories["sunset"], sunsets)
	}
	if !slices.Equal(cat.Categories["forest"], forests) {
		t.Errorf("forest category %v, want %v", cat.Categories["forest"], forests)
	}
	t.Logf("%d of %d images categorised as drawn (%d of %d sunsets)", correct, len(ids), len(cat.Categories["sunset"]), len(sunsets))

	if len(ar.Items) != len(ids) {
		t.Fatalf("%d analysis items", len(ar.Items))
	}
	first := ar.Items[0] // sunset_beach.jpg
	if first.Labels[0] != "sunset" || first.Features["width"] != 320 || first.Features["warm"] < 0.3 || !strings.Contains(first.Caption, "orange") {
		t.Errorf("first item %+v", first)
	}
}

// Missing IDs, corrupt images and non-images are skipped and named; the
// rest is still analysed. With nothing analysable the task fails clearly.
func TestAnalysisBadInputs(t *testing.T) {
	store, ids, _ := storeAll(t)
	ctx := context.Background()
	corrupt, err := store.Store(ctx, bytes.NewReader(samples.Images()[2].Content[:600]), "image/jpeg", map[string]string{"filename": "cut.jpg"})
	if err != nil {
		t.Fatal(err)
	}
	text, err := store.Store(ctx, strings.NewReader("just words"), "text/plain", map[string]string{"filename": "notes.txt"})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := analysis.New(store)

	res, cat, _ := execute(t, a, ids[0], "f-missing", corrupt.ID, text.ID, "../../etc/passwd")
	if !res.Success {
		t.Fatalf("failed: %+v", res.Error)
	}
	if got := cat.Categories["sunset"]; !slices.Equal(got, []string{ids[0]}) || len(cat.Categories) != 1 {
		t.Errorf("categories %v", cat.Categories)
	}
	for _, want := range []string{"categorised 1 image into", "skipped 4", "f-missing", "file not found", "cut.jpg", "corrupt image", "notes.txt", "not an image but text/plain", "../../etc/passwd"} {
		if !strings.Contains(res.Summary, want) {
			t.Errorf("summary lacks %q: %s", want, res.Summary)
		}
	}

	res, _, _ = execute(t, a, "f-missing", text.ID)
	if res.Success || res.Error.Code != schemas.CodeInvalidInput || !strings.Contains(res.Error.Message, "none of the 2 files could be analysed") {
		t.Errorf("all bad: %+v", res)
	}
	res, err = a.Execute(ctx, schemas.NewExecutionContext(nil))
	if err != nil || res.Success || !strings.Contains(res.Error.Message, `input "images"`) {
		t.Errorf("no input: %+v, %v", res, err)
	}
	res, cat, _ = execute(t, a)
	if !res.Success || len(cat.Categories) != 0 {
		t.Errorf("empty input: %+v", res)
	}
}

// With a vision model configured its first label is the category; an image
// the model fails on falls back to features, and the method says so.
func TestAnalysisWithVisionModel(t *testing.T) {
	store, ids, _ := storeAll(t)
	calls := 0
	model := llmiface.VisionModelFunc(func(_ context.Context, image []byte, mediaType string) ([]string, string, schemas.Usage, error) {
		calls++
		if !strings.HasPrefix(mediaType, "image/") || len(image) == 0 {
			t.Errorf("model got %d bytes of %q", len(image), mediaType)
		}
		if calls == 2 {
			return nil, "", schemas.Usage{}, errors.New("model overloaded")
		}
		return []string{" Golden Hour ", "sky"}, "a warm evening", schemas.Usage{Tokens: schemas.Tokens{Prompt: 100, Completion: 10}, Cost: 0.25, ModelMS: 7}, nil
	})
	a, _ := analysis.New(store, analysis.WithVisionModel(model))
	res, cat, ar := execute(t, a, ids[0], ids[1], ids[5])
	if cat.Method != analysis.MethodMixed || !strings.Contains(res.Summary, "(method: vision+features)") {
		t.Errorf("method %q, summary %q", cat.Method, res.Summary)
	}
	if !slices.Equal(cat.Categories["golden hour"], []string{ids[0], ids[5]}) || !slices.Equal(cat.Categories["sunset"], []string{ids[1]}) {
		t.Errorf("categories %v", cat.Categories)
	}
	if ar.Items[0].Caption != "a warm evening" || res.Metrics.Tokens != (schemas.Tokens{Prompt: 200, Completion: 20}) ||
		res.Metrics.Cost != 0.5 || res.Metrics.ModelMS != 14 {
		t.Errorf("item %+v, metrics %+v; want 200+20 tokens, cost 0.5, model 14ms", ar.Items[0], res.Metrics)
	}
}
