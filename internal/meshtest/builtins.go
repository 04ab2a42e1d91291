package meshtest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/analysis"
	"github.com/agentmesh/agentmesh/agents/builtin/docsearch"
	"github.com/agentmesh/agentmesh/agents/builtin/folder"
	"github.com/agentmesh/agentmesh/agents/builtin/imagesearch"
	"github.com/agentmesh/agentmesh/agents/builtin/knowledge"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/agents/builtin/summarize"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/resolvers"
)

// Builtins stores files (samples.Images(), say) in the mesh's object store
// and runs the named built-in agents over them, as `agentmesh up` does,
// until the test ends: TextAgent, ImageSearchAgent, DocumentSearchAgent,
// AnalysisAgent (without a vision model), FolderAgent, SummarizeAgent,
// KnowledgeAgent (lexical: without an embedding model). It
// returns the file id of each stored sample by its name.
func (m *Mesh) Builtins(t testing.TB, files []samples.Sample, names ...string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids := map[string]string{}
	store := resolvers.NewObjectStore(m.Res.Files)
	for _, s := range files {
		ref, err := store.Store(ctx, bytes.NewReader(s.Content), s.MediaType, s.Metadata())
		if err != nil {
			t.Fatal(err)
		}
		ids[s.Name] = ref.ID
	}
	var search *resolvers.ObjectStore
	catalog := func() resolvers.Catalog { // one index, built on first use
		if search == nil {
			search = resolvers.NewObjectStore(m.Res.Files)
			ictx, icancel := context.WithCancel(context.Background())
			t.Cleanup(icancel)
			if err := search.Index(ictx); err != nil {
				t.Fatal(err)
			}
		}
		return search
	}
	for _, name := range names {
		var a agents.Agent
		var err error
		switch name {
		case text.Name:
			a = text.New()
		case imagesearch.Name:
			a, err = imagesearch.New(catalog())
		case docsearch.Name:
			a, err = docsearch.New(catalog())
		case analysis.Name:
			a, err = analysis.New(resolvers.NewObjectStore(m.Res.Files), analysis.WithVisionModel(nil))
		case folder.Name:
			a, err = folder.New(resolvers.NewObjectStore(m.Res.Files))
		case summarize.Name:
			a, err = summarize.New(resolvers.NewObjectStore(m.Res.Files))
		case knowledge.Name:
			a, err = knowledge.New(catalog(), m.Res.Files)
		default:
			t.Fatalf("meshtest: %q is not a built-in agent Builtins runs", name)
		}
		if err != nil {
			t.Fatalf("meshtest: %s: %v", name, err)
		}
		m.Run(t, a, agents.WithValueResolver(resolvers.NewCollections(m.Res.Files, 0)))
	}
	return ids
}
