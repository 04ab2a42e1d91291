package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentmesh/agentmesh/schemas"
)

// EnvEmbedModel names the embedding model dense retrieval uses: a bare
// name such as "text-embedding-3-small" or Ollama's "nomic-embed-text" on
// the OpenAI-compatible endpoint (OPENAI_BASE_URL, OPENAI_API_KEY), or
// "gemini:gemini-embedding-001" on the Gemini API (GEMINI_API_KEY,
// GEMINI_BASE_URL).
const EnvEmbedModel = "AGENTMESH_EMBED_MODEL"

// ErrNoEmbeddings means the configured provider has no embedding call:
// Anthropic's API has none.
var ErrNoEmbeddings = errors.New("llm: the provider has no embeddings endpoint (use an OpenAI-compatible one or Gemini)")

// Embedder turns texts into vectors, one per text, in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, Usage, error)
}

// EmbedConfigFromEnv is the embedding model's configuration: the model of
// AGENTMESH_EMBED_MODEL, on the OpenAI-compatible endpoint (OPENAI_BASE_URL,
// OPENAI_API_KEY) or, with the gemini: prefix, on the Gemini API
// (GEMINI_API_KEY, GEMINI_BASE_URL), with AGENTMESH_LLM_TIMEOUT and
// AGENTMESH_LLM_RETRIES as for chat. ok is false when AGENTMESH_EMBED_MODEL
// is not set.
func EmbedConfigFromEnv() (cfg Config, ok bool, err error) {
	value := strings.TrimSpace(os.Getenv(EnvEmbedModel))
	if value == "" {
		return Config{}, false, nil
	}
	chat, err := ConfigFromEnv()
	if err != nil {
		return Config{}, true, err
	}
	provider, model := ProviderOpenAI, strings.TrimPrefix(value, ProviderOpenAI+":")
	if rest, found := strings.CutPrefix(value, ProviderGemini+":"); found {
		provider, model = ProviderGemini, rest
	}
	if strings.HasPrefix(value, ProviderAnthropic+":") {
		return Config{}, true, fmt.Errorf("%w: %s=%q: Anthropic's API has no embeddings; name an OpenAI-compatible model or gemini:MODEL", ErrInvalidConfig, EnvEmbedModel, value)
	}
	baseEnv, keyEnv := envOf(provider)
	cfg = Config{
		Provider:   provider,
		BaseURL:    strings.TrimSpace(os.Getenv(baseEnv)),
		APIKey:     strings.TrimSpace(os.Getenv(keyEnv)),
		Model:      model,
		Timeout:    chat.Timeout,
		MaxRetries: chat.MaxRetries,
	}
	if !cfg.Configured() {
		hint := fmt.Sprintf("set %s (and %s for a local server such as Ollama)", keyEnv, baseEnv)
		if provider == ProviderGemini {
			hint = "set " + keyEnv
		}
		return cfg, true, fmt.Errorf("%w: %s=%q needs an endpoint: %s", ErrNotConfigured, EnvEmbedModel, value, hint)
	}
	return cfg, true, nil
}

// Embed returns the configured model's embedding of each text, in order:
// through the OpenAI-compatible /embeddings endpoint, or the Gemini API's
// batchEmbedContents; retried on 429, 5xx and connection errors as Chat
// is. An Anthropic client fails with ErrNoEmbeddings.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, Usage, error) {
	start := time.Now()
	usage := Usage{Model: c.cfg.Model}
	var send func(ctx context.Context) ([][]float32, int, error)
	switch p := c.prov.(type) {
	case *openAIProvider:
		send = func(ctx context.Context) ([][]float32, int, error) {
			resp, err := p.api.CreateEmbeddings(ctx, openai.EmbeddingRequest{Input: texts, Model: openai.EmbeddingModel(c.cfg.Model)})
			if err != nil {
				return nil, 0, openAIError(err)
			}
			out := make([][]float32, len(texts))
			for _, e := range resp.Data {
				if e.Index < 0 || e.Index >= len(texts) {
					return nil, 0, fmt.Errorf("%w: %s answered an embedding for input %d of %d", ErrEmptyResponse, c.cfg.BaseURL, e.Index, len(texts))
				}
				out[e.Index] = e.Embedding
			}
			return out, resp.Usage.PromptTokens, nil
		}
	case *geminiProvider:
		send = func(ctx context.Context) ([][]float32, int, error) { return p.embed(ctx, c.cfg.Model, texts) }
	default:
		return nil, usage, fmt.Errorf("%w (this client speaks %s); set %s to an OpenAI-compatible or gemini: model", ErrNoEmbeddings, c.cfg.Provider, EnvEmbedModel)
	}
	if len(texts) == 0 {
		return nil, usage, nil
	}
	var lastErr error
	for attempt := 0; attempt <= c.cfg.MaxRetries; attempt++ {
		usage.Attempts = attempt + 1
		h := &hint{}
		actx, cancel := context.WithTimeout(context.WithValue(ctx, hintKey{}, h), c.cfg.Timeout)
		vecs, tokens, err := send(actx)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if err == nil {
			usage.Duration = time.Since(start)
			usage.Tokens = schemas.Tokens{Prompt: tokens}
			return checkVectors(vecs, c.cfg.BaseURL, usage)
		}
		if errors.Is(err, ErrEmptyResponse) {
			usage.Duration = time.Since(start)
			return nil, usage, err
		}
		if ctx.Err() != nil {
			return nil, usage, fmt.Errorf("embedding call to %s: %w", c.cfg.BaseURL, ctx.Err())
		}
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

// embed calls the Gemini API's batchEmbedContents: one request per text,
// one embedding each, in order.
func (p *geminiProvider) embed(ctx context.Context, model string, texts []string) ([][]float32, int, error) {
	type content struct {
		Parts []geminiPart `json:"parts"`
	}
	type request struct {
		Model   string  `json:"model"`
		Content content `json:"content"`
	}
	body := struct {
		Requests []request `json:"requests"`
	}{}
	tokens := 0
	for _, t := range texts {
		body.Requests = append(body.Requests, request{Model: "models/" + model, Content: content{Parts: []geminiPart{{Text: t}}}})
		tokens += EstimateTokens(Message{Content: t})
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, 0, err
	}
	hresp, err := p.post(ctx, model, "batchEmbedContents", raw)
	if err != nil {
		return nil, 0, err
	}
	defer hresp.Body.Close()
	var out struct {
		Embeddings []struct {
			Values []float32 `json:"values"`
		} `json:"embeddings"`
	}
	if err := json.NewDecoder(hresp.Body).Decode(&out); err != nil {
		return nil, 0, fmt.Errorf("gemini: the answer is not JSON: %w", err)
	}
	if len(out.Embeddings) != len(texts) {
		return nil, 0, fmt.Errorf("%w: %s answered %d embeddings for %d texts", ErrEmptyResponse, p.base, len(out.Embeddings), len(texts))
	}
	vecs := make([][]float32, len(texts))
	for i, e := range out.Embeddings {
		vecs[i] = e.Values
	}
	return vecs, tokens, nil
}

// checkVectors refuses an answer that lacks a vector or mixes sizes.
func checkVectors(out [][]float32, endpoint string, usage Usage) ([][]float32, Usage, error) {
	for i, v := range out {
		if len(v) == 0 || len(v) != len(out[0]) {
			return nil, usage, fmt.Errorf("%w: %s answered no embedding, or one of another size, for input %d of %d", ErrEmptyResponse, endpoint, i, len(out))
		}
	}
	return out, usage, nil
}
