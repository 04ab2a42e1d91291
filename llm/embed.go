package llm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentmesh/agentmesh/schemas"
)

// EnvEmbedModel names the embedding model dense retrieval uses, e.g.
// "text-embedding-3-small" or Ollama's "nomic-embed-text". It is served by
// the OpenAI-compatible endpoint of OPENAI_BASE_URL and OPENAI_API_KEY.
const EnvEmbedModel = "AGENTMESH_EMBED_MODEL"

// ErrNoEmbeddings means the configured provider has no embedding call in
// this package; dense retrieval needs an OpenAI-compatible endpoint.
var ErrNoEmbeddings = errors.New("llm: embeddings need an OpenAI-compatible endpoint")

// Embedder turns texts into vectors, one per text, in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, Usage, error)
}

// EmbedConfigFromEnv is the embedding model's configuration: the model of
// AGENTMESH_EMBED_MODEL on the OpenAI-compatible endpoint (OPENAI_BASE_URL,
// OPENAI_API_KEY), with AGENTMESH_LLM_TIMEOUT and AGENTMESH_LLM_RETRIES
// as for chat. ok is false when AGENTMESH_EMBED_MODEL is not set.
func EmbedConfigFromEnv() (cfg Config, ok bool, err error) {
	model := strings.TrimSpace(os.Getenv(EnvEmbedModel))
	if model == "" {
		return Config{}, false, nil
	}
	chat, err := ConfigFromEnv()
	if err != nil {
		return Config{}, true, err
	}
	baseEnv, keyEnv := envOf(ProviderOpenAI)
	cfg = Config{
		Provider:   ProviderOpenAI,
		BaseURL:    strings.TrimSpace(os.Getenv(baseEnv)),
		APIKey:     strings.TrimSpace(os.Getenv(keyEnv)),
		Model:      strings.TrimPrefix(model, ProviderOpenAI+":"),
		Timeout:    chat.Timeout,
		MaxRetries: chat.MaxRetries,
	}
	if !cfg.Configured() {
		return cfg, true, fmt.Errorf("%w: %s=%q needs an OpenAI-compatible endpoint: set %s (and %s for a local server such as Ollama)",
			ErrNotConfigured, EnvEmbedModel, model, keyEnv, baseEnv)
	}
	return cfg, true, nil
}

// Embed returns the configured model's embedding of each text, in order,
// through the OpenAI-compatible /embeddings endpoint, retrying on 429, 5xx
// and connection errors as Chat does. A client of another provider fails
// with ErrNoEmbeddings.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, Usage, error) {
	start := time.Now()
	usage := Usage{Model: c.cfg.Model}
	p, ok := c.prov.(*openAIProvider)
	if !ok {
		return nil, usage, fmt.Errorf("%w (this client speaks %s); set %s with OPENAI_BASE_URL", ErrNoEmbeddings, c.cfg.Provider, EnvEmbedModel)
	}
	if len(texts) == 0 {
		return nil, usage, nil
	}
	req := openai.EmbeddingRequest{Input: texts, Model: openai.EmbeddingModel(c.cfg.Model)}
	var lastErr error
	for attempt := 0; attempt <= c.cfg.MaxRetries; attempt++ {
		usage.Attempts = attempt + 1
		h := &hint{}
		actx, cancel := context.WithTimeout(context.WithValue(ctx, hintKey{}, h), c.cfg.Timeout)
		resp, err := p.api.CreateEmbeddings(actx, req)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if err == nil {
			usage.Duration = time.Since(start)
			usage.Tokens = schemas.Tokens{Prompt: resp.Usage.PromptTokens}
			return embeddingVectors(resp, len(texts), c.cfg.BaseURL, usage)
		}
		if ctx.Err() != nil {
			return nil, usage, fmt.Errorf("embedding call to %s: %w", c.cfg.BaseURL, ctx.Err())
		}
		err = openAIError(err)
		status := statusOf(err, h)
		lastErr = c.classify(err, status, timedOut)
		if !retryable(status, err, timedOut) || attempt == c.cfg.MaxRetries {
			break
		}
		after, given := h.retryAfter(time.Now())
		if err := c.sleep(ctx, backoff(attempt, after, given)); err != nil {
			return nil, usage, fmt.Errorf("embedding call to %s: %w (last error: %w)", c.cfg.BaseURL, err, lastErr)
		}
	}
	usage.Duration = time.Since(start)
	return nil, usage, lastErr
}

// embeddingVectors puts the answer's vectors in the order of the texts,
// refusing an answer that lacks one or mixes dimensions.
func embeddingVectors(resp openai.EmbeddingResponse, n int, endpoint string, usage Usage) ([][]float32, Usage, error) {
	out := make([][]float32, n)
	for _, e := range resp.Data {
		if e.Index < 0 || e.Index >= n {
			return nil, usage, fmt.Errorf("%w: %s answered an embedding for input %d of %d", ErrEmptyResponse, endpoint, e.Index, n)
		}
		out[e.Index] = e.Embedding
	}
	for i, v := range out {
		if len(v) == 0 || len(v) != len(out[0]) {
			return nil, usage, fmt.Errorf("%w: %s answered no embedding, or one of another size, for input %d of %d", ErrEmptyResponse, endpoint, i, n)
		}
	}
	return out, usage, nil
}
