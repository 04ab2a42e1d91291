package knowledge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/knowledge"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

func TestKnowledgeAgent(t *testing.T) {
	s := newShop(t)
	a, err := knowledge.New(s.store, s.obs)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Contract().Validate(); err != nil {
		t.Fatal(err)
	}
	res, cs := search(t, a, "How many days do I have to return an item for a refund?", map[string]any{"kb": "shop"})
	if !res.Success || len(cs) != knowledge.DefaultTopK {
		t.Fatalf("%+v: %d chunks", res, len(cs))
	}
	top := cs[0]
	if top.FileID != s.ids["refund-policy.md"] || !strings.Contains(top.Text, "within 30 days of delivery") ||
		top.Heading != "Refund policy > Refund window" || top.Filename != "refund-policy.md" {
		t.Errorf("top chunk %+v", top)
	}
	if !strings.Contains(res.Summary, "in 5 documents of knowledge base \"shop\"") {
		t.Errorf("summary %q", res.Summary)
	}
	for i := 1; i < len(cs); i++ {
		if cs[i].Score > cs[i-1].Score {
			t.Errorf("chunks not best first: %v", cs)
		}
	}

	// top_k, filters, file_ids, and every stored document without a kb.
	_, cs = search(t, a, "canopy trees", map[string]any{"top_k": 1})
	if len(cs) != 1 || cs[0].FileID != s.ids["forest-report.html"] {
		t.Errorf("without a kb: %+v", cs)
	}
	for filter, want := range map[string]string{"tags": "refunds", "filename": "*.md"} {
		_, cs = search(t, a, "refund policy sunset photographs", map[string]any{"kb": "shop", "filters": map[string]any{filter: want}, "top_k": 20})
		if len(cs) == 0 {
			t.Errorf("filter %s=%s found nothing", filter, want)
		}
		for _, c := range cs {
			if c.FileID != s.ids["refund-policy.md"] && (filter == "tags" || c.FileID != s.ids["photography-tips.md"]) {
				t.Errorf("filter %s=%s let through %s", filter, want, c.Filename)
			}
		}
	}
	ec := schemas.NewExecutionContext(nil)
	ec.SetParams(map[string]any{"kb": "shop"})
	_ = ec.Put("query", schemas.TextValue("stream consumers", "test"))
	_ = ec.Put("file_ids", schemas.FilesValue(schemas.FromIDs(schemas.ContentDocuments, s.ids["mesh-overview.pdf"]), "test"))
	res, err = a.Execute(context.Background(), ec)
	if err != nil || !res.Success {
		t.Fatalf("file_ids: %+v %v", res, err)
	}
	var only schemas.Chunks
	_ = res.Outputs["chunks"].Decode(&only)
	for _, c := range only {
		if c.FileID != s.ids["mesh-overview.pdf"] {
			t.Errorf("file_ids let through %s", c.Filename)
		}
	}
}

func TestKnowledgeAgentRefuses(t *testing.T) {
	s := newShop(t)
	a, _ := knowledge.New(s.store, s.obs)
	for _, tt := range []struct {
		query  string
		params map[string]any
		code   string
		says   string
	}{
		{"refund", map[string]any{"kb": "nope"}, schemas.CodeNotFound, `"nope"`},
		{"refund", map[string]any{"kb": "Bad Name"}, schemas.CodeInvalidParams, "lower-case"},
		{"refund", map[string]any{"kb": 3.0}, schemas.CodeInvalidParams, "param kb"},
		{"refund", map[string]any{"top_k": 0.0}, schemas.CodeInvalidParams, "top_k"},
		{"refund", map[string]any{"top_k": 500.0}, schemas.CodeInvalidParams, "top_k 500"},
		{"refund", map[string]any{"mode": "magic"}, schemas.CodeInvalidParams, "magic"},
		{"refund", map[string]any{"mode": "dense"}, schemas.CodeInvalidParams, knowledge.EnvEmbedModel},
		{"refund", map[string]any{"filters": "tags=x"}, schemas.CodeInvalidParams, "filters"},
		{"  ", nil, schemas.CodeInvalidInput, "query"},
	} {
		res, _ := search(t, a, tt.query, tt.params)
		if res.Success || res.Error == nil || res.Error.Code != tt.code || !strings.Contains(res.Error.Message, tt.says) {
			t.Errorf("%q %v: %+v, want %s saying %q", tt.query, tt.params, res.Error, tt.code, tt.says)
		}
	}
	if _, err := s.kb.Create(context.Background(), "empty", ""); err != nil {
		t.Fatal(err)
	}
	res, _ := search(t, a, "refund", map[string]any{"kb": "empty"})
	if res.Success || res.Error.Code != schemas.CodeNotFound || !strings.Contains(res.Error.Message, "kb add") {
		t.Errorf("empty kb: %+v", res.Error)
	}
}

// TestSecondInstanceServesWithoutRebuild: a second agent, started after
// the first indexed the base, chunks and embeds nothing: it reads the
// indexes the first stored, and embeds only the query.
func TestSecondInstanceServesWithoutRebuild(t *testing.T) {
	s := newShop(t)
	srv := llmtest.New(t)
	first, _ := knowledge.New(s.store, s.obs, knowledge.WithEmbedder(embedder(t, srv), "test-embed"))
	res, want := search(t, first, "Which items are final sale?", map[string]any{"kb": "shop"})
	if !res.Success || first.Index().Built() != int64(len(s.ids)) {
		t.Fatalf("first instance built %d of %d documents: %+v", first.Index().Built(), len(s.ids), res)
	}
	if res.Metrics.Tokens.Prompt == 0 {
		t.Errorf("embedding usage not reported: %+v", res.Metrics)
	}
	embedded := srv.EmbeddedTexts()

	second, _ := knowledge.New(s.store, s.obs, knowledge.WithEmbedder(embedder(t, srv), "test-embed"))
	res, got := search(t, second, "Which items are final sale?", map[string]any{"kb": "shop"})
	if !res.Success || second.Index().Built() != 0 {
		t.Fatalf("second instance built %d documents: %+v", second.Index().Built(), res)
	}
	if n := srv.EmbeddedTexts() - embedded; n != 1 {
		t.Errorf("second instance embedded %d texts, want only the query", n)
	}
	if len(got) != len(want) || got[0] != want[0] {
		t.Errorf("second instance answered %+v, first %+v", got, want)
	}

	// Another embedding model builds its own vectors.
	third, _ := knowledge.New(s.store, s.obs, knowledge.WithEmbedder(embedder(t, srv), "other-embed"))
	if res, _ := search(t, third, "final sale", map[string]any{"kb": "shop"}); !res.Success || third.Index().Built() != int64(len(s.ids)) {
		t.Errorf("another model built %d documents", third.Index().Built())
	}
}

// TestConcurrentSearches: searches at once on a fresh instance (one task
// per goroutine, as the runtime runs them) all answer, from one index.
func TestConcurrentSearches(t *testing.T) {
	s := newShop(t)
	srv := llmtest.New(t)
	a, _ := knowledge.New(s.store, s.obs, knowledge.WithEmbedder(embedder(t, srv), "test-embed"))
	results := make(chan string, 8)
	for range 8 {
		go func() {
			ec := schemas.NewExecutionContext(nil)
			ec.SetParams(map[string]any{"kb": "shop", "top_k": 1})
			_ = ec.Put("query", schemas.TextValue("are gift cards refundable?", "test"))
			res, err := a.Execute(context.Background(), ec)
			switch {
			case err != nil:
				results <- err.Error()
			case !res.Success:
				results <- res.Err().Error()
			default:
				var cs schemas.Chunks
				if err := res.Outputs["chunks"].Decode(&cs); err != nil || len(cs) == 0 {
					results <- fmt.Sprintf("no chunk (%v)", err)
					return
				}
				results <- cs[0].FileID
			}
		}()
	}
	for range 8 {
		if got := <-results; got != s.ids["refund-policy.md"] {
			t.Errorf("a concurrent search answered %s", got)
		}
	}
}

// TestEmbeddingModelDown: a model that fails while indexing fails the task
// with the model's code (the runtime reports it, retryable), instead of
// skipping every document as unreadable; nothing half-built is stored.
func TestEmbeddingModelDown(t *testing.T) {
	s := newShop(t)
	down := knowledge.EmbedderFunc(func(context.Context, []string) ([][]float32, schemas.Usage, error) {
		return nil, schemas.Usage{}, schemas.NewError(schemas.CodeUnavailable, "llm: endpoint unavailable")
	})
	a, _ := knowledge.New(s.store, s.obs, knowledge.WithEmbedder(down, "down"))
	ec := schemas.NewExecutionContext(nil)
	ec.SetParams(map[string]any{"kb": "shop"})
	_ = ec.Put("query", schemas.TextValue("refund", "test"))
	res, err := a.Execute(context.Background(), ec)
	if err == nil || schemas.CodeOf(err) != schemas.CodeUnavailable || !strings.Contains(err.Error(), "embedding the chunks of") {
		t.Fatalf("result %+v, err %v; want the model's unavailable error", res, err)
	}
	if a.Index().Built() != 0 {
		t.Errorf("%d documents counted as built", a.Index().Built())
	}
}
