package knowledge_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents/builtin/knowledge"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestChangedDocumentIsReindexed: a document replaced in the object store
// is chunked again on the next search, alone, as the store's watch
// (resolvers.ObjectStore.Index) reports the change; the stored index
// follows, so a new instance reads the new chunks.
func TestChangedDocumentIsReindexed(t *testing.T) {
	s := newShop(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	watched := resolvers.NewObjectStore(s.obs)
	if err := watched.Index(ctx); err != nil {
		t.Fatal(err)
	}
	a, _ := knowledge.New(watched, s.obs)
	if res, cs := search(t, a, "restocking fee", map[string]any{"kb": "shop"}); !res.Success || mentions(cs, "restocking") {
		t.Fatalf("before the change: %+v %+v", res, cs)
	}
	built := a.Index().Built()

	id := s.ids["refund-policy.md"]
	info, err := s.obs.GetInfo(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	changed := "# Refund policy\n\n## Restocking fee\n\nOpened electronics carry a restocking fee of 15 percent.\n"
	if _, err := s.obs.Put(ctx, jetstream.ObjectMeta{Name: id, Metadata: info.Metadata}, bytes.NewReader([]byte(changed))); err != nil {
		t.Fatal(err)
	}

	var cs schemas.Chunks
	if !fixture.Within(10*time.Second, func() bool {
		_, cs = search(t, a, "restocking fee", map[string]any{"kb": "shop"})
		return mentions(cs, "restocking fee of 15 percent")
	}) {
		t.Fatalf("the changed document was not re-indexed: %+v", cs)
	}
	if cs[0].FileID != id || cs[0].Heading != "Refund policy > Restocking fee" {
		t.Errorf("top chunk %+v", cs[0])
	}
	if n := a.Index().Built() - built; n != 1 {
		t.Errorf("%d documents were chunked again, want only the changed one", n)
	}
	if _, cs := search(t, a, "within 30 days of delivery", map[string]any{"kb": "shop"}); mentions(cs, "within 30 days of delivery") {
		t.Errorf("the old text is still served: %+v", cs)
	}

	fresh, _ := knowledge.New(s.store, s.obs)
	if _, cs := search(t, fresh, "restocking fee", map[string]any{"kb": "shop"}); !mentions(cs, "15 percent") || fresh.Index().Built() != 0 {
		t.Errorf("a new instance built %d documents and found %+v", fresh.Index().Built(), cs)
	}
}

func mentions(cs schemas.Chunks, phrase string) bool {
	for _, c := range cs {
		if strings.Contains(c.Text, phrase) {
			return true
		}
	}
	return false
}

// TestDeletedDocumentIsForgotten: a document of a base removed from the
// store is skipped and named, and its index object is removed with it.
func TestDeletedDocumentIsForgotten(t *testing.T) {
	s := newShop(t)
	ctx := context.Background()
	a, _ := knowledge.New(s.store, s.obs)
	if res, _ := search(t, a, "gift cards", map[string]any{"kb": "shop"}); !res.Success {
		t.Fatalf("%+v", res)
	}
	id := s.ids["refund-policy.md"]
	if _, err := s.obs.GetInfo(ctx, resolvers.KnowledgePrefix+"docs/"+id); err != nil {
		t.Fatalf("no index object for the document: %v", err)
	}
	if err := s.store.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	res, cs := search(t, a, "gift cards", map[string]any{"kb": "shop"})
	if !res.Success || mentions(cs, "Gift cards") || !strings.Contains(res.Summary, id+" is no longer stored") {
		t.Errorf("after the delete: %s %+v", res.Summary, cs)
	}
	if _, err := s.obs.GetInfo(ctx, resolvers.KnowledgePrefix+"docs/"+id); err == nil {
		t.Error("the deleted document's index object is still stored")
	}
}
