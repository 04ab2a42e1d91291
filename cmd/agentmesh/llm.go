package main

import (
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents/builtin/llmiface"
	"github.com/agentmesh/agentmesh/llm"
)

// textModelFromEnv returns the LLM configured by AGENTMESH_MODEL and its
// provider's key and base URL (docs/llm.md), or a nil interface when none
// is, so agents fall back to their offline methods. With the mesh's LLM
// bucket (nil when this identity may not see it) its calls wait for the
// rate limits shared by every process (docs/llm.md#rate-limits).
func textModelFromEnv(shared jetstream.KeyValue) (llmiface.TextModel, error) {
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
	if shared != nil {
		c = c.WithShared(shared)
	}
	return c, nil
}
