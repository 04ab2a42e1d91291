package llm_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
)

func TestEmbed(t *testing.T) {
	srv := llmtest.New(t)
	c, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"refunds within 30 days", "photographing sunsets", "refunds within 30 days"}
	vecs, usage, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 3 || len(vecs[0]) != llmtest.EmbeddingDims || !reflect.DeepEqual(vecs[0], llmtest.Embedding(texts[0])) {
		t.Fatalf("vectors %d, first of %d", len(vecs), len(vecs[0]))
	}
	if !reflect.DeepEqual(vecs[0], vecs[2]) || reflect.DeepEqual(vecs[0], vecs[1]) {
		t.Error("the same text must give the same vector and another text another")
	}
	if usage.Tokens.Prompt == 0 || srv.EmbeddedTexts() != 3 {
		t.Errorf("usage %+v, embedded %d", usage, srv.EmbeddedTexts())
	}
}

func TestEmbedGemini(t *testing.T) {
	srv := llmtest.NewGemini(t)
	cfg := srv.Config()
	cfg.Model = "gemini-embedding-001"
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"refunds within 30 days", "photographing sunsets"}
	vecs, usage, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 2 || !reflect.DeepEqual(vecs[1], llmtest.Embedding(texts[1])) || srv.EmbeddedTexts() != 2 || usage.Tokens.Prompt == 0 {
		t.Errorf("vectors %d, embedded %d, usage %+v", len(vecs), srv.EmbeddedTexts(), usage)
	}
}

func TestEmbedNeedsOpenAI(t *testing.T) {
	srv := llmtest.NewAnthropic(t)
	c, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Embed(context.Background(), []string{"x"}); !errors.Is(err, llm.ErrNoEmbeddings) {
		t.Errorf("err = %v, want ErrNoEmbeddings", err)
	}
}

func TestEmbedConfigFromEnv(t *testing.T) {
	t.Setenv(llm.EnvEmbedModel, "")
	if _, ok, err := llm.EmbedConfigFromEnv(); ok || err != nil {
		t.Errorf("unset: ok %v err %v", ok, err)
	}
	t.Setenv(llm.EnvEmbedModel, "nomic-embed-text")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv(llm.EnvModel, "")
	if _, ok, err := llm.EmbedConfigFromEnv(); !ok || !errors.Is(err, llm.ErrNotConfigured) {
		t.Errorf("no endpoint: ok %v err %v", ok, err)
	}
	t.Setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
	cfg, ok, err := llm.EmbedConfigFromEnv()
	if !ok || err != nil || cfg.Model != "nomic-embed-text" || cfg.BaseURL != "http://localhost:11434/v1" || cfg.Provider != llm.ProviderOpenAI {
		t.Errorf("cfg %+v ok %v err %v", cfg, ok, err)
	}
	t.Setenv(llm.EnvEmbedModel, "gemini:gemini-embedding-001")
	t.Setenv("GEMINI_API_KEY", "k")
	cfg, ok, err = llm.EmbedConfigFromEnv()
	if !ok || err != nil || cfg.Model != "gemini-embedding-001" || cfg.Provider != llm.ProviderGemini || cfg.APIKey != "k" {
		t.Errorf("gemini cfg %+v ok %v err %v", cfg, ok, err)
	}
	t.Setenv(llm.EnvEmbedModel, "anthropic:claude-haiku-4-5")
	if _, ok, err := llm.EmbedConfigFromEnv(); !ok || !errors.Is(err, llm.ErrInvalidConfig) {
		t.Errorf("anthropic: ok %v err %v", ok, err)
	}
}
