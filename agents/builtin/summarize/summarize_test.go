package summarize_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/llmiface"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/agents/builtin/summarize"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

func TestSentences(t *testing.T) {
	got := summarize.Sentences("Dr. Smith came. He said \"hi.\" Then 3 left!\nA heading\n\nLast one? Yes")
	want := []string{"Dr. Smith came.", "He said \"hi.\"", "Then 3 left!", "A heading", "Last one?", "Yes"}
	if !slices.Equal(got, want) {
		t.Errorf("Sentences = %q, want %q", got, want)
	}
}

func TestExtractive(t *testing.T) {
	text := `Streams
Streams keep messages in order. Consumers read messages from streams at their own pace.
The weather was nice that day. Streams and consumers together make messages durable.
Lunch was pasta.`
	got := summarize.Extractive(text, 2)
	want := []string{"Consumers read messages from streams at their own pace.", "Streams and consumers together make messages durable."}
	if !slices.Equal(got, want) {
		t.Errorf("Extractive = %q, want %q", got, want)
	}
	if got := summarize.Extractive("One. Two.", 5); len(got) != 2 {
		t.Errorf("short text: %q", got)
	}
	if got := summarize.Extractive("", 3); got != nil {
		t.Errorf("empty text: %q", got)
	}
}

func setup(t *testing.T) (*resolvers.ObjectStore, map[string]string) {
	t.Helper()
	store := resolvers.NewObjectStore(bustest.Start(t).Provision(t).Files)
	ids := map[string]string{}
	put := func(name, mediaType string, content []byte) {
		ref, err := store.Store(context.Background(), bytes.NewReader(content), mediaType, map[string]string{"filename": name})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = ref.ID
	}
	for _, d := range samples.Documents() {
		put(d.Name, d.MediaType, d.Content)
	}
	put("broken.pdf", "application/pdf", []byte("%PDF-1.4 nothing else"))
	put("photo.jpg", "image/jpeg", samples.Images()[0].Content)
	return store, ids
}

func run(t *testing.T, a *summarize.Agent, params map[string]any, ids ...string) schemas.AgentResult {
	t.Helper()
	ec := schemas.NewExecutionContext(nil)
	ec.SetParams(params)
	if err := ec.Put("documents", schemas.FilesValue(schemas.FromIDs(schemas.ContentDocuments, ids...), "test")); err != nil {
		t.Fatal(err)
	}
	res, err := a.Execute(context.Background(), ec)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestSummarizeExtractive(t *testing.T) {
	store, ids := setup(t)
	a, err := summarize.New(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Contract().Validate(); err != nil {
		t.Fatal(err)
	}
	res := run(t, a, map[string]any{"sentences": 2}, ids["mesh-overview.pdf"])
	if !res.Success {
		t.Fatalf("%+v", res.Error)
	}
	text, _ := res.Outputs["summary"].Text()
	if !strings.Contains(text, "agent") || strings.Count(text, ".") != 2 {
		t.Errorf("PDF summary %q", text)
	}
	if res.Summary != "summarised 1 document (method: extractive)" {
		t.Errorf("summary %q", res.Summary)
	}

	res = run(t, a, nil, ids["nats-notes.txt"], ids["forest-report.html"], ids["broken.pdf"], ids["photo.jpg"], "f-missing")
	text, _ = res.Outputs["summary"].Text()
	if !strings.Contains(text, "nats-notes.txt: ") || !strings.Contains(text, "forest-report.html: ") || strings.Contains(text, "tracking") {
		t.Errorf("two-document summary %q", text)
	}
	for _, want := range []string{"summarised 2 documents (method: extractive)", "skipped 3", "broken.pdf", "corrupt document", "photo.jpg) is image/jpeg, not a document", "f-missing: file not found"} {
		if !strings.Contains(res.Summary, want) {
			t.Errorf("summary lacks %q: %s", want, res.Summary)
		}
	}

	res = run(t, a, nil, ids["photo.jpg"], "f-missing")
	if res.Success || res.Error.Code != schemas.CodeInvalidInput || !strings.Contains(res.Error.Message, "none of the 2 documents could be read") {
		t.Errorf("all bad: %+v", res)
	}
	res = run(t, a, map[string]any{"sentences": 0}, ids["nats-notes.txt"])
	if res.Success || res.Error.Code != schemas.CodeInvalidParams || !strings.Contains(res.Error.Message, "sentences") {
		t.Errorf("bad sentences: %+v", res)
	}
}

func TestSummarizeWithLLM(t *testing.T) {
	store, ids := setup(t)
	var gotSystem, gotUser string
	model := llmiface.TextModelFunc(func(_ context.Context, system, user string) (string, schemas.Usage, error) {
		gotSystem, gotUser = system, user
		return "  The mesh connects agents.  ", schemas.Usage{Tokens: schemas.Tokens{Prompt: 50, Completion: 6}, Cost: 0.75}, nil
	})
	a, _ := summarize.New(store, summarize.WithTextModel(model))
	res := run(t, a, nil, ids["mesh-overview.pdf"])
	text, _ := res.Outputs["summary"].Text()
	if text != "The mesh connects agents." || res.Summary != "summarised 1 document (method: llm)" || res.Metrics.Tokens.Prompt != 50 || res.Metrics.Cost != 0.75 {
		t.Errorf("result %+v, text %q", res, text)
	}
	if gotSystem != summarize.SystemPrompt || !strings.Contains(gotUser, "## Document: mesh-overview.pdf\nAgent mesh overview") {
		t.Errorf("prompt: %q / %q", gotSystem, gotUser)
	}

	failing := llmiface.TextModelFunc(func(context.Context, string, string) (string, schemas.Usage, error) {
		return "", schemas.Usage{}, errors.New("503 overloaded")
	})
	a, _ = summarize.New(store, summarize.WithTextModel(failing))
	ec := schemas.NewExecutionContext(nil)
	_ = ec.Put("documents", schemas.FilesValue(schemas.FromIDs(schemas.ContentDocuments, ids["nats-notes.txt"]), "test"))
	if _, err := a.Execute(context.Background(), ec); err == nil || !strings.Contains(err.Error(), "503 overloaded") {
		t.Errorf("failing model: %v", err)
	}
}
