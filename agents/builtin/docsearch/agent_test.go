package docsearch_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/docsearch"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// storeDocs stores the sample documents, a broken PDF and an image in a
// real object store and returns it with the IDs by filename.
func storeDocs(t *testing.T) (*resolvers.ObjectStore, map[string]string) {
	t.Helper()
	store := resolvers.NewObjectStore(bustest.Start(t).Provision(t).Files)
	ids := map[string]string{}
	put := func(name, mediaType string, content []byte, meta map[string]string) {
		if meta == nil {
			meta = map[string]string{"filename": name}
		}
		ref, err := store.Store(context.Background(), bytes.NewReader(content), mediaType, meta)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = ref.ID
	}
	for _, d := range samples.Documents() {
		put(d.Name, d.MediaType, d.Content, d.Metadata())
	}
	put("broken.pdf", "application/pdf", []byte("%PDF-1.4\nnot really a pdf about jetstream"), nil)
	img := samples.Images()[0]
	put(img.Name, img.MediaType, img.Content, img.Metadata())
	return store, ids
}

func search(t *testing.T, a *docsearch.Agent, params map[string]any) (schemas.AgentResult, []string) {
	t.Helper()
	ec := schemas.NewExecutionContext(nil)
	ec.SetParams(params)
	res, err := a.Execute(context.Background(), ec)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success {
		return res, nil
	}
	fc, err := res.Outputs["documents"].Files()
	if err != nil {
		t.Fatal(err)
	}
	if fc.ContentType() != schemas.ContentDocuments {
		t.Errorf("content type %q", fc.ContentType())
	}
	return res, fc.IDs()
}

func TestDocumentSearch(t *testing.T) {
	store, ids := storeDocs(t)
	a, err := docsearch.New(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Contract().Validate(); err != nil {
		t.Fatal(err)
	}

	// "consumers" is only in the text of the plain-text notes.
	res, got := search(t, a, map[string]any{"query": "how do consumers acknowledge messages"})
	if len(got) == 0 || got[0] != ids["nats-notes.txt"] {
		t.Fatalf("consumers: got %v (%s), want nats-notes.txt first", got, res.Summary)
	}
	// "orchestrator" is only inside the PDF.
	_, got = search(t, a, map[string]any{"query": "orchestrator"})
	if len(got) != 1 || got[0] != ids["mesh-overview.pdf"] {
		t.Errorf("orchestrator: got %v, want only the PDF", got)
	}
	// "canopy" only in the HTML body; the script's words are not indexed.
	_, got = search(t, a, map[string]any{"query": "canopy"})
	if len(got) != 1 || got[0] != ids["forest-report.html"] {
		t.Errorf("canopy: got %v, want only the HTML report", got)
	}
	if _, got = search(t, a, map[string]any{"query": "tracking"}); len(got) != 0 {
		t.Errorf("tracking (inside <script>) matched %v", got)
	}
	// The image is never a document; the broken PDF is listed by name only.
	res, got = search(t, a, map[string]any{"query": "", "limit": 10})
	if len(got) != len(samples.Documents())+1 || strings.Contains(strings.Join(got, ","), ids["sunset_beach.jpg"]) {
		t.Errorf("every document: got %d ids %v", len(got), got)
	}
	if !strings.Contains(res.Summary, "1 document could not be read") {
		t.Errorf("summary does not report the broken PDF: %s", res.Summary)
	}
	_, got = search(t, a, map[string]any{"query": "sunset", "limit": 1})
	if len(got) != 1 || got[0] != ids["photography-tips.md"] {
		t.Errorf("sunset limit 1: got %v", got)
	}

	// The digest is cached in the metadata.
	ref, err := store.ResolveMetadata(context.Background(), ids["mesh-overview.pdf"])
	if err != nil {
		t.Fatal(err)
	}
	if ref.Metadata[docsearch.MetaKeywordsVersion] != docsearch.KeywordsVersion ||
		!strings.Contains(ref.Metadata[docsearch.MetaKeywords], "agent") ||
		ref.Metadata[docsearch.MetaTitle] != "Agent mesh overview" {
		t.Errorf("cached metadata %v", ref.Metadata)
	}
	broken, _ := store.ResolveMetadata(context.Background(), ids["broken.pdf"])
	if !strings.Contains(broken.Metadata[docsearch.MetaExtractError], "corrupt document") {
		t.Errorf("broken PDF metadata %v", broken.Metadata)
	}
}

func TestDocumentSearchBadParams(t *testing.T) {
	store, _ := storeDocs(t)
	a, _ := docsearch.New(store)
	for _, limit := range []any{0.0, 2.5, "ten"} {
		res, _ := search(t, a, map[string]any{"query": "x", "limit": limit})
		if res.Success || res.Error.Code != schemas.CodeInvalidParams || !strings.Contains(res.Error.Message, "limit") {
			t.Errorf("limit %v: %+v", limit, res)
		}
	}
	if _, err := docsearch.New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
}
