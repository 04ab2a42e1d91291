package prompt_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/llmiface"
	"github.com/agentmesh/agentmesh/agents/builtin/prompt"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

func TestLoadExample(t *testing.T) {
	cfg, err := prompt.Load("testdata/haiku.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Contract()
	if c.Name != "HaikuAgent" || c.Capability != schemas.CapGeneration || len(c.Inputs) != 2 || c.Outputs[0].DataType != schemas.TypeText {
		t.Errorf("contract %+v", c)
	}
	if c.Inputs[1].ContentTypeHint != schemas.ContentImages {
		t.Errorf("input hint %q", c.Inputs[1].ContentTypeHint)
	}
	if err := c.ValidateParams(map[string]any{"mood": 3}); err == nil {
		t.Error("params schema not applied: mood 3 accepted")
	}
	if err := c.ValidateParams(map[string]any{"mood": "joyful"}); err != nil {
		t.Error(err)
	}
}

// Validate reports every problem at once.
func TestValidateReportsEveryProblem(t *testing.T) {
	_, err := prompt.Parse([]byte(`
name: "bad name!"
capability: GENERATION
inputs:
  - {name: text, data_type: TEXT}
  - {name: text, data_type: NOPE}
outputs:
  - {name: out, data_type: CATEGORIZATION}
params: {type: 42}
`))
	if !errors.Is(err, prompt.ErrInvalidConfig) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"system_prompt is empty", "bad name!", "description is empty", `input "text" is declared twice`, `unknown data type "NOPE"`, "params"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.yaml")
	os.WriteFile(typo, []byte("name: A\ndescription: d\ncapability: X\nsystem_promt: hi\noutputs: [{name: o, data_type: TEXT}]\n"), 0o644)
	if _, err := prompt.Load(typo); err == nil || !strings.Contains(err.Error(), "system_promt") || !strings.Contains(err.Error(), typo) {
		t.Errorf("typo: %v", err)
	}
	empty := filepath.Join(dir, "empty.yaml")
	os.WriteFile(empty, nil, 0o644)
	if _, err := prompt.Load(empty); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty: %v", err)
	}
	if _, err := prompt.Load(filepath.Join(dir, "missing.yaml")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

func TestExecuteWithoutModel(t *testing.T) {
	cfg, _ := prompt.Load("testdata/haiku.yaml")
	a, err := prompt.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Execute(context.Background(), schemas.NewExecutionContext(nil))
	if err != nil || res.Success || !strings.Contains(res.Error.Message, "PromptAgent HaikuAgent needs an LLM: set OPENAI_API_KEY/OPENAI_BASE_URL") {
		t.Errorf("%+v, %v", res, err)
	}
}

func TestExecuteRendersInputs(t *testing.T) {
	store := resolvers.NewObjectStore(bustest.Start(t).Provision(t).Files)
	ref, err := store.Store(context.Background(), strings.NewReader("pixels"), "image/png", map[string]string{"filename": "dusk.png", "tags": "sunset"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := prompt.Parse([]byte(`
name: CaptionAgent
description: Captions things.
capability: GENERATION
system_prompt: Be brief.
inputs:
  - {name: note, data_type: TEXT, required: true}
  - {name: images, data_type: FILE_IDS, content_type_hint: images}
  - {name: cats, data_type: CATEGORIZATION}
outputs:
  - {name: caption, data_type: TEXT}
`))
	if err != nil {
		t.Fatal(err)
	}
	var system, user string
	model := llmiface.TextModelFunc(func(_ context.Context, s, u string) (string, schemas.Usage, error) {
		system, user = s, u
		return " A quiet dusk. ", schemas.Usage{Tokens: schemas.Tokens{Prompt: 30, Completion: 4}, Cost: 0.125, ModelMS: 12}, nil
	})
	a, _ := prompt.New(cfg, model, prompt.WithResolver(store))

	ec := schemas.NewExecutionContext(nil)
	ec.SetParams(map[string]any{"style": "terse"})
	_ = ec.Put("note", schemas.TextValue("evening walk", "test"))
	_ = ec.Put("images", schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, ref.ID, "f-missing"), "test"))
	_ = ec.Write("cats", schemas.Categorization{Categories: map[string][]string{"sunset": {ref.ID}}}, schemas.TypeCategorization, "test")
	res, err := a.Execute(context.Background(), ec)
	if err != nil || !res.Success {
		t.Fatalf("%+v, %v", res, err)
	}
	if text, _ := res.Outputs["caption"].Text(); text != "A quiet dusk." || res.Metrics.Tokens.Completion != 4 || res.Metrics.Cost != 0.125 || res.Metrics.ModelMS != 12 {
		t.Errorf("output %q, metrics %+v", text, res.Metrics)
	}
	if system != "Be brief." {
		t.Errorf("system %q", system)
	}
	for _, want := range []string{"## Input note (TEXT)\nevening walk", "2 files (images)", ref.ID + ": dusk.png, image/png, 6 bytes, tags=sunset", "f-missing (cannot be read", `"sunset": [`, `"style": "terse"`} {
		if !strings.Contains(user, want) {
			t.Errorf("user message lacks %q:\n%s", want, user)
		}
	}

	res, _ = a.Execute(context.Background(), schemas.NewExecutionContext(nil))
	if res.Success || !strings.Contains(res.Error.Message, `input "note" (TEXT) is required`) {
		t.Errorf("missing input: %+v", res)
	}
}
