package main

import (
	"context"

	"github.com/agentmesh/agentmesh/agents/builtin/knowledge"
	"github.com/agentmesh/agentmesh/agents/builtin/llmiface"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
)

// textModelFromEnv returns the LLM configured by AGENTMESH_MODEL and its
// provider's key and base URL (docs/llm.md), or a nil interface when none
// is, so agents fall back to their offline methods. When m has the mesh's
// LLM bucket (not for an identity that may not see it) its calls wait for
// the rate limits shared by every process and count in the mesh's budgets
// (docs/llm.md).
func textModelFromEnv(m *mesh) (llmiface.TextModel, error) {
	cfg, err := llm.ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	if !cfg.Configured() {
		return nil, nil
	}
	c, err := llm.New(cfg)
	if err != nil {
		return nil, err
	}
	if m != nil && m.Res.LLM != nil {
		c = c.WithShared(m.JS, m.Res.LLM)
	}
	return c, nil
}

// embedderFromEnv is the embedding model of AGENTMESH_EMBED_MODEL on the
// OpenAI-compatible endpoint, with its name; nil when the variable is not
// set (KnowledgeAgent then ranks lexically only).
func embedderFromEnv() (knowledge.Embedder, string, error) {
	cfg, ok, err := llm.EmbedConfigFromEnv()
	if !ok || err != nil {
		return nil, "", err
	}
	c, err := llm.New(cfg)
	if err != nil {
		return nil, "", err
	}
	return knowledge.EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, schemas.Usage, error) {
		v, u, err := c.Embed(ctx, texts)
		return v, u.Report(), err
	}), cfg.Model, nil
}
