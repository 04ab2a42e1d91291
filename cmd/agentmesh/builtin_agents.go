package main

import (
	"context"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/analysis"
	"github.com/agentmesh/agentmesh/agents/builtin/docsearch"
	"github.com/agentmesh/agentmesh/agents/builtin/folder"
	"github.com/agentmesh/agentmesh/agents/builtin/imagesearch"
	"github.com/agentmesh/agentmesh/agents/builtin/knowledge"
	"github.com/agentmesh/agentmesh/agents/builtin/prompt"
	"github.com/agentmesh/agentmesh/agents/builtin/summarize"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/resolvers"
)

// The built-in agents that work on stored files. They reach the files through
// the object store resolver on the mesh's mesh_files store. SummarizeAgent
// and PromptAgent use the LLM configured by AGENTMESH_MODEL and its
// provider's key and base URL (docs/llm.md); without one, SummarizeAgent writes an extractive
// summary. AnalysisAgent categorises by pixel features. The search agents keep
// an index of the store's metadata, updated by watching the store.
// KnowledgeAgent embeds with AGENTMESH_EMBED_MODEL when it is set.
func init() {
	registerBuiltin(imagesearch.Name, "SEARCH: finds stored images by name, tags, folder and what the pixels show",
		func(ctx context.Context, m *mesh) (agents.Agent, error) {
			store, err := indexedStore(ctx, m)
			if err != nil {
				return nil, err
			}
			return imagesearch.New(store)
		})
	registerBuiltin(analysis.Name, "ANALYSIS: categorises images (sunset, forest, seascape, night, snow, ...)",
		func(_ context.Context, m *mesh) (agents.Agent, error) {
			return analysis.New(m.agentFiles(), analysis.WithVisionModel(nil))
		})
	registerBuiltin(folder.Name, "ORGANIZATION: files categorised images into folders",
		func(_ context.Context, m *mesh) (agents.Agent, error) {
			return folder.New(m.agentFiles())
		})
	registerBuiltin(docsearch.Name, "SEARCH: finds stored documents (text, Markdown, HTML, PDF) by name and content",
		func(ctx context.Context, m *mesh) (agents.Agent, error) {
			store, err := indexedStore(ctx, m)
			if err != nil {
				return nil, err
			}
			return docsearch.New(store)
		})
	registerBuiltin(summarize.Name, "GENERATION: summarises documents (LLM, or extractive without one)",
		func(_ context.Context, m *mesh) (agents.Agent, error) {
			model, err := textModelFromEnv(m)
			if err != nil {
				return nil, err
			}
			return summarize.New(m.agentFiles(), summarize.WithTextModel(model))
		})
	registerBuiltin(knowledge.Name, "SEARCH: finds the passages of a knowledge base's documents that answer a question (BM25, embeddings)",
		func(ctx context.Context, m *mesh) (agents.Agent, error) {
			store, err := indexedStore(ctx, m)
			if err != nil {
				return nil, err
			}
			var opts []knowledge.Option
			e, model, err := embedderFromEnv()
			if err != nil {
				return nil, err
			}
			if e != nil {
				opts = append(opts, knowledge.WithEmbedder(e, model))
			}
			return knowledge.New(store, m.Res.Files, opts...)
		})
}

// indexedStore is the mesh's file store with its metadata indexed in
// memory (resolvers.ObjectStore.Index) for as long as ctx lives, so that a
// search agent does not list the store on every task.
func indexedStore(ctx context.Context, m *mesh) (*resolvers.ObjectStore, error) {
	store := m.agentFiles()
	if err := store.Index(ctx); err != nil {
		return nil, err
	}
	return store, nil
}

// promptAgentFromConfig builds the PromptAgent a YAML file declares, for
// `agentmesh agent --config FILE`. FILE_IDS inputs are described to the
// model through the object store. Without a configured LLM the agent answers
// every task with an error saying how to configure one.
func promptAgentFromConfig(ctx context.Context, m *mesh, pm *procMetrics, path string) (agents.Agent, error) {
	cfg, err := prompt.Load(path)
	if err != nil {
		return nil, err
	}
	model, err := textModelFromEnv(m)
	if err != nil {
		return nil, err
	}
	opts := []prompt.Option{prompt.WithResolver(m.agentFiles())}
	if len(cfg.MCP) > 0 {
		tools, err := promptMCPTools(ctx, cfg)
		if err != nil {
			return nil, err
		}
		opts = append(opts, tools)
	}
	if !cfg.Policy.Empty() {
		// The config's policies, with their decisions counted on the
		// metrics endpoint when it is on.
		gopts, err := pm.policyObserver()
		if err != nil {
			return nil, err
		}
		ps, err := cfg.Policy.Policies()
		if err != nil {
			return nil, err
		}
		opts = append(opts, prompt.WithGuard(llm.NewGuard(ps, gopts...)))
	}
	return prompt.New(cfg, model, opts...)
}
