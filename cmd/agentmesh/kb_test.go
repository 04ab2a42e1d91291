package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/knowledge"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestKBCommands: create a base, add a document from disk and one by id,
// list, search through a live KnowledgeAgent, remove; wrong calls exit 2.
func TestKBCommands(t *testing.T) {
	m := meshtest.New(t)
	ids := m.Builtins(t, samples.Documents(), knowledge.Name)
	url := m.Srv.URL()
	kb := func(args ...string) (int, string, string) {
		return runArgs(append(append([]string{"kb"}, args...), "--nats", url)...)
	}

	if code, out, errOut := kb("create", "shop", "--description", "shop policies"); code != 0 || !strings.Contains(out, "created knowledge base shop") {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := kb("create", "shop"); code != 1 || !strings.Contains(errOut, "knowledge base exists") {
		t.Errorf("create twice: %d %q", code, errOut)
	}
	dir := t.TempDir()
	faq := filepath.Join(dir, "faq.md")
	if err := os.WriteFile(faq, []byte("# FAQ\n\nGift wrapping costs 3 euros per parcel.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := kb("add", "shop", faq, ids["refund-policy.md"]); code != 0 || !strings.Contains(out, "added 2 documents to shop") {
		t.Fatalf("add: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := kb("add", "shop", "f-nope"); code != 1 || !strings.Contains(errOut, `"f-nope" is neither a file here nor a stored file id`) {
		t.Errorf("add unknown id: %d %q", code, errOut)
	}
	img := filepath.Join(dir, "photo.jpg")
	if err := os.WriteFile(img, samples.Images()[0].Content, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := kb("add", "shop", img); code != 1 || !strings.Contains(errOut, "not a document") {
		t.Errorf("add an image: %d %q", code, errOut)
	}

	code, out, _ := kb("ls", "--json")
	var bases []knowledge.Base
	if code != 0 || json.Unmarshal([]byte(out), &bases) != nil || len(bases) != 1 || len(bases[0].Documents) != 2 {
		t.Fatalf("ls: %d %s", code, out)
	}
	if code, out, _ := kb("ls", "shop"); code != 0 || !strings.Contains(out, "faq.md") || !strings.Contains(out, "refund-policy.md") {
		t.Errorf("ls shop: %d %s", code, out)
	}
	// The base's objects are not files.
	files := resolvers.NewObjectStore(m.Res.Files)
	for ref, err := range files.List(t.Context()) {
		if err != nil || strings.HasPrefix(ref.ID, resolvers.KnowledgePrefix) {
			t.Errorf("files list shows %q (%v)", ref.ID, err)
		}
	}

	code, out, errOut := kb("search", "shop", "how much is gift wrapping?", "--top-k", "2", "--json")
	var chunks schemas.Chunks
	if code != 0 || json.Unmarshal([]byte(out), &chunks) != nil || len(chunks) == 0 || !strings.Contains(chunks[0].Text, "3 euros") {
		t.Fatalf("search: %d %s %s", code, out, errOut)
	}
	if code, out, _ := kb("search", "shop", "are gift cards refundable?"); code != 0 || !strings.Contains(out, "refund-policy.md · Refund policy > Items that cannot be refunded") {
		t.Errorf("search (text): %d %s", code, out)
	}
	if code, _, errOut := kb("search", "nope", "refund"); code != 1 || !strings.Contains(errOut, "knowledge base not found") {
		t.Errorf("search an unknown base: %d %q", code, errOut)
	}

	if code, out, _ := kb("rm", "shop", "--json"); code != 0 || !strings.Contains(out, `"removed": "shop"`) {
		t.Errorf("rm: %d %s", code, out)
	}
	if code, _, errOut := kb("rm", "shop"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Errorf("rm twice: %d %q", code, errOut)
	}

	for _, args := range [][]string{
		{"create"}, {"create", "Bad Name"}, {"add", "shop"}, {"search", "shop"}, {"search", "shop", "q", "--top-k", "0"},
		{"search", "shop", "q", "--mode", "magic"}, {"search", "shop", "q", "--filter", "novalue"}, {"ls", "a", "b"},
	} {
		if code, _, errOut := kb(args...); code != 2 {
			t.Errorf("kb %s: exit %d (%q), want 2", strings.Join(args, " "), code, errOut)
		}
	}
}
