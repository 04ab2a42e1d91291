package main

import (
	"github.com/agentmesh/agentmesh/agents/builtin/llmiface"
	"github.com/agentmesh/agentmesh/llm"
)

// textModelFromEnv returns the LLM configured by AGENTMESH_MODEL and its
// provider's key and base URL (docs/llm.md), or a nil interface when none
// is, so agents fall back to their offline methods.
func textModelFromEnv() (llmiface.TextModel, error) {
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
	return c, nil
}
