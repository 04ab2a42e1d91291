package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentmesh/agentmesh/schemas"
)

// Usage is what one call cost.
type Usage struct {
	Model    string         `json:"model"`
	Tokens   schemas.Tokens `json:"tokens"`
	Cost     float64        `json:"cost"`     // US dollars, 0 when the model has no price
	Attempts int            `json:"attempts"` // 1 plus the retries made
	Duration time.Duration  `json:"duration"`
}

// Add returns the sum of two usages (model and attempts of the latest).
func (u Usage) Add(o Usage) Usage {
	return Usage{
		Model:    o.Model,
		Tokens:   u.Tokens.Add(o.Tokens),
		Cost:     u.Cost + o.Cost,
		Attempts: u.Attempts + o.Attempts,
		Duration: u.Duration + o.Duration,
	}
}

// Report is the usage as the mesh reports it (schemas.Usage): tokens,
// cost, and the call's duration as model time.
func (u Usage) Report() schemas.Usage {
	return schemas.Usage{Tokens: u.Tokens, Cost: u.Cost, ModelMS: u.Duration.Milliseconds()}
}

// Client talks to one OpenAI-compatible endpoint. It is safe for concurrent
// use and never changes after New: tools and messages travel per request.
type Client struct {
	cfg   Config
	api   *openai.Client
	sleep func(ctx context.Context, d time.Duration) error
}

// New builds a client for cfg. It fails with ErrNotConfigured when neither an
// API key nor a base URL is set, so callers can fall back to something else.
func New(cfg Config) (*Client, error) {
	if !cfg.Configured() {
		return nil, fmt.Errorf("%w: set %s (and %s for a local server such as Ollama, vLLM or llama.cpp)", ErrNotConfigured, EnvAPIKey, EnvBaseURL)
	}
	cfg = cfg.withDefaults()
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = hintDoer{next: &http.Client{}}
	return &Client{cfg: cfg, api: openai.NewClientWithConfig(oc), sleep: sleepCtx}, nil
}

// Model is the model used when a request names none.
func (c *Client) Model() string { return c.cfg.Model }

// Endpoint is the base URL the client talks to.
func (c *Client) Endpoint() string { return c.cfg.BaseURL }

// Chat sends one Chat Completions request, retrying on 429, 5xx and
// connection errors (honouring Retry-After), each attempt under the
// configured timeout. An empty req.Model means the configured model.
//
// The call is a client span "chat MODEL" with the GenAI semantic
// conventions' attributes (operation, system, models, tokens), a child of
// ctx's span.
func (c *Client) Chat(ctx context.Context, req openai.ChatCompletionRequest) (resp openai.ChatCompletionResponse, usage Usage, err error) {
	if req.Model == "" {
		req.Model = c.cfg.Model
	}
	ctx, span := c.startSpan(ctx, req.Model)
	defer func() { c.endSpan(span, resp, usage, err) }()
	return c.chat(ctx, req)
}

func (c *Client) chat(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, Usage, error) {
	start := time.Now()
	usage := Usage{Model: req.Model}
	var lastErr error
	for attempt := 0; attempt <= c.cfg.MaxRetries; attempt++ {
		usage.Attempts = attempt + 1
		h := &hint{}
		actx, cancel := context.WithTimeout(context.WithValue(ctx, hintKey{}, h), c.cfg.Timeout)
		resp, err := c.api.CreateChatCompletion(actx, req)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if err == nil {
			if len(resp.Choices) == 0 {
				return resp, usage, fmt.Errorf("%w from %s (model %s)", ErrEmptyResponse, c.cfg.BaseURL, req.Model)
			}
			usage.Tokens = schemas.Tokens{Prompt: resp.Usage.PromptTokens, Completion: resp.Usage.CompletionTokens}
			if p, ok := c.cfg.price(req.Model); ok {
				usage.Cost = p.Cost(usage.Tokens.Prompt, usage.Tokens.Completion)
			}
			usage.Duration = time.Since(start)
			return resp, usage, nil
		}
		if ctx.Err() != nil {
			return resp, usage, fmt.Errorf("llm call to %s: %w", c.cfg.BaseURL, ctx.Err())
		}
		status := statusOf(err, h)
		lastErr = c.classify(err, status, timedOut)
		if !retryable(status, err, timedOut) || attempt == c.cfg.MaxRetries {
			break
		}
		after, given := h.retryAfter(time.Now())
		if err := c.sleep(ctx, backoff(attempt, after, given)); err != nil {
			return resp, usage, fmt.Errorf("llm call to %s: %w (last error: %w)", c.cfg.BaseURL, err, lastErr)
		}
	}
	usage.Duration = time.Since(start)
	return openai.ChatCompletionResponse{}, usage, lastErr
}

// Complete sends a system and a user message and returns the answer's text
// and what the call used (tokens, cost from the price table, model time).
// It satisfies the built-in agents' TextModel interface.
func (c *Client) Complete(ctx context.Context, system, user string) (string, schemas.Usage, error) {
	var msgs []openai.ChatCompletionMessage
	if system != "" {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: system})
	}
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: user})
	resp, usage, err := c.Chat(ctx, openai.ChatCompletionRequest{Messages: msgs})
	if err != nil {
		return "", usage.Report(), err
	}
	return resp.Choices[0].Message.Content, usage.Report(), nil
}

// classify turns a go-openai error into one of the package's sentinels with
// the endpoint named and what to do.
func (c *Client) classify(err error, status int, timedOut bool) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("%w: %s answered HTTP %d: the key was refused; check %s (and %s): %v", ErrUnauthorized, c.cfg.BaseURL, status, EnvAPIKey, EnvBaseURL, apiMessage(err))
	case status == http.StatusTooManyRequests:
		return fmt.Errorf("%w: %s answered HTTP 429 after %d retries: %v", ErrRateLimited, c.cfg.BaseURL, c.cfg.MaxRetries, apiMessage(err))
	case status >= 500:
		return fmt.Errorf("%w: %s answered HTTP %d: %v", ErrUnavailable, c.cfg.BaseURL, status, apiMessage(err))
	case timedOut:
		return fmt.Errorf("%w: %s did not answer within %s (set %s to wait longer)", ErrUnavailable, c.cfg.BaseURL, c.cfg.Timeout, EnvTimeout)
	case status == 0:
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, c.cfg.BaseURL, err)
	default:
		return fmt.Errorf("llm: %s answered HTTP %d for model %s: %v", c.cfg.BaseURL, status, c.cfg.Model, apiMessage(err))
	}
}

// statusOf is the HTTP status of a failed attempt: from go-openai's error
// types, else from the response the transport saw.
func statusOf(err error, h *hint) int {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0 {
		return apiErr.HTTPStatusCode
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) && reqErr.HTTPStatusCode != 0 {
		return reqErr.HTTPStatusCode
	}
	return h.statusCode()
}

func apiMessage(err error) string {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) && apiErr.Message != "" {
		return apiErr.Message
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) && len(reqErr.Body) > 0 {
		b := reqErr.Body
		if len(b) > 200 {
			b = b[:200]
		}
		return string(b)
	}
	return err.Error()
}
