package knowledge_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents/builtin/knowledge"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// shop is a mesh's file store holding the sample documents and an image,
// with a knowledge base "shop" of every sample document.
type shop struct {
	obs   jetstream.ObjectStore
	store *resolvers.ObjectStore
	kb    *knowledge.Store
	ids   map[string]string // by filename
}

func newShop(t *testing.T) *shop {
	t.Helper()
	obs := bustest.Start(t).Provision(t).Files
	s := &shop{obs: obs, store: resolvers.NewObjectStore(obs), kb: knowledge.NewStore(obs), ids: map[string]string{}}
	ctx := context.Background()
	if _, err := s.kb.Create(ctx, "shop", "the sample documents"); err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, d := range samples.Documents() {
		ref, err := s.store.Store(ctx, bytes.NewReader(d.Content), d.MediaType, d.Metadata())
		if err != nil {
			t.Fatal(err)
		}
		s.ids[d.Name] = ref.ID
		docs = append(docs, ref.ID)
	}
	img := samples.Images()[0]
	if _, err := s.store.Store(ctx, bytes.NewReader(img.Content), img.MediaType, img.Metadata()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.kb.Add(ctx, "shop", docs...); err != nil {
		t.Fatal(err)
	}
	return s
}

// embedder is the scripted model's embeddings through the real client.
func embedder(t *testing.T, srv *llmtest.Server) knowledge.Embedder {
	t.Helper()
	c, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	return knowledge.EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, schemas.Usage, error) {
		v, u, err := c.Embed(ctx, texts)
		return v, u.Report(), err
	})
}

// search runs one task and returns its result and chunks.
func search(t *testing.T, a *knowledge.Agent, query string, params map[string]any) (schemas.AgentResult, schemas.Chunks) {
	t.Helper()
	ec := schemas.NewExecutionContext(nil)
	ec.SetParams(params)
	if err := ec.Put("query", schemas.TextValue(query, "test")); err != nil {
		t.Fatal(err)
	}
	res, err := a.Execute(context.Background(), ec)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success {
		return res, nil
	}
	v := res.Outputs["chunks"]
	if err := schemas.DefaultRegistry().ValidateValue(knowledge.Name, "chunks", v); err != nil {
		t.Fatal(err)
	}
	var cs schemas.Chunks
	if err := v.Decode(&cs); err != nil {
		t.Fatal(err)
	}
	return res, cs
}
