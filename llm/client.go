package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

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

// Client is the configured chat model: one provider (OpenAI-compatible,
// Anthropic or Gemini) behind the Model interface, with retries on 429, 5xx and
// connection errors honouring Retry-After, a timeout per attempt, tracing,
// and token and cost accounting per call. It is safe for concurrent use and
// never changes after New: tools and messages travel per request.
type Client struct {
	cfg    Config
	prov   provider
	sleep  func(ctx context.Context, d time.Duration) error
	shared *shared // the mesh's budget ledger and rate limits (WithShared); nil for none
}

var _ Model = (*Client)(nil)

// New builds a client for cfg. It fails with ErrNotConfigured when neither an
// API key nor a base URL is set, so callers can fall back to something else,
// and with ErrInvalidConfig for an unknown provider.
func New(cfg Config) (*Client, error) {
	configured := cfg.Configured()
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if !configured {
		baseEnv, keyEnv := envOf(cfg.Provider)
		return nil, fmt.Errorf("%w: set %s (and %s for a local server such as Ollama, vLLM or llama.cpp, or a proxy)", ErrNotConfigured, keyEnv, baseEnv)
	}
	doer := hintDoer{next: &http.Client{}}
	c := &Client{cfg: cfg, sleep: sleepCtx}
	switch cfg.Provider {
	case ProviderAnthropic:
		c.prov = newAnthropic(cfg, doer)
	case ProviderGemini:
		c.prov = newGemini(cfg, doer)
	default:
		c.prov = newOpenAI(cfg, doer)
	}
	return c, nil
}

// Configured reports whether an LLM endpoint is set at all: an API key, a
// base URL, or both. When it is false the orchestrator uses its offline planner.
func (c Config) Configured() bool { return c.APIKey != "" || c.BaseURL != "" }

// Model is the model used when a request names none.
func (c *Client) Model() string { return c.cfg.Model }

// Provider is the protocol the client speaks: ProviderOpenAI, ProviderAnthropic or ProviderGemini.
func (c *Client) Provider() string { return c.cfg.Provider }

// Endpoint is the base URL the client talks to.
func (c *Client) Endpoint() string { return c.cfg.BaseURL }

// Chat sends one request and waits for the whole answer, retrying on 429,
// 5xx and connection errors (honouring Retry-After), each attempt under the
// configured timeout. An empty req.Model means the configured model.
//
// Made in a task (the context the agent runtime gives Execute), the call is
// a step of the task's journal (schemas.Step, step name "model"): a
// redelivered task gets the recorded answer without calling the model.
//
// The call is a client span "chat MODEL" with the GenAI semantic
// conventions' attributes (operation, provider, models, tokens), a child of
// ctx's span.
func (c *Client) Chat(ctx context.Context, req Request) (Response, Usage, error) {
	return c.Stream(ctx, req, nil)
}

// Stream is Chat with the answer streamed: onDelta gets each piece of text
// and of tool-call arguments as the provider sends it, and the Response
// returned is the one Chat would return. An attempt that failed before its
// first delta is retried like Chat's; once a delta went out the failure is
// returned as it is, so no piece is sent twice. A nil onDelta is Chat.
func (c *Client) Stream(ctx context.Context, req Request, onDelta func(Delta)) (resp Response, usage Usage, err error) {
	if req.Model, err = c.model(req.Model); err != nil {
		return Response{}, Usage{Model: req.Model}, err
	}
	return c.journaled(ctx, req, onDelta) // a step of the task ctx belongs to (journal.go)
}

// traced is the call under its span, budgets and rate limits.
func (c *Client) traced(ctx context.Context, req Request, onDelta func(Delta)) (resp Response, usage Usage, err error) {
	ctx, span := c.startSpan(ctx, req.Model, onDelta != nil)
	defer func() { c.endSpan(span, resp, usage, err) }()
	return c.budgeted(ctx, req, onDelta)
}

// model is the model a request names in the client's protocol: the
// configured one for "", the name without its provider prefix when it has
// the client's ("anthropic:claude-…" on an Anthropic client, as a
// PromptAgent's config may give it); another provider's prefix is an
// error, as this client cannot speak to that provider.
func (c *Client) model(m string) (string, error) {
	if m == "" {
		return c.cfg.Model, nil
	}
	prefix, rest, found := strings.Cut(m, ":")
	if !found || prefix != ProviderOpenAI && prefix != ProviderAnthropic && prefix != ProviderGemini {
		return m, nil
	}
	if prefix != c.cfg.Provider {
		return m, fmt.Errorf("%w: model %q is %s's, but this client speaks %s (%s=%s:%s); set %s to a %s model, or name a %s model",
			ErrInvalidRequest, m, prefix, c.cfg.Provider, EnvModel, c.cfg.Provider, c.cfg.Model, EnvModel, prefix, c.cfg.Provider)
	}
	if rest == "" {
		return c.cfg.Model, nil
	}
	return rest, nil
}

func (c *Client) call(ctx context.Context, req Request, onDelta func(Delta)) (Response, Usage, error) {
	start := time.Now()
	usage := Usage{Model: req.Model}
	sent := false
	var deliver func(Delta)
	if onDelta != nil {
		deliver = func(d Delta) { sent = true; onDelta(d) }
	}
	var lastErr error
	for attempt := 0; attempt <= c.cfg.MaxRetries; attempt++ {
		usage.Attempts = attempt + 1
		slots, err := c.admit(ctx, req) // the mesh's shared rate limits (ratelimit.go)
		if err != nil {
			usage.Duration = time.Since(start)
			return Response{}, usage, err
		}
		h := &hint{}
		actx, cancel := context.WithTimeout(context.WithValue(ctx, hintKey{}, h), c.cfg.Timeout)
		resp, tokens, err := c.prov.send(actx, req, deliver)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		slots.done(ctx, tokens, err, h)
		if err == nil {
			resp.Message.Role = RoleAssistant
			usage.Tokens = tokens
			if p, ok := c.cfg.price(req.Model); ok {
				usage.Cost = p.Cost(usage.Tokens.Prompt, usage.Tokens.Completion)
			}
			usage.Duration = time.Since(start)
			return resp, usage, nil
		}
		switch {
		case errors.Is(err, ErrEmptyResponse):
			usage.Duration = time.Since(start)
			return Response{}, usage, fmt.Errorf("%w from %s (model %s)", ErrEmptyResponse, c.cfg.BaseURL, req.Model)
		case errors.Is(err, ErrInvalidRequest):
			usage.Duration = time.Since(start)
			return Response{}, usage, err // nothing was sent; another attempt would fail the same way
		}
		if ctx.Err() != nil {
			return Response{}, usage, fmt.Errorf("llm call to %s: %w", c.cfg.BaseURL, ctx.Err())
		}
		status := statusOf(err, h)
		lastErr = c.classify(err, status, timedOut)
		if sent || !retryable(status, err, timedOut) || attempt == c.cfg.MaxRetries {
			break
		}
		after, given := h.retryAfter(time.Now())
		if err := c.sleep(ctx, backoff(attempt, after, given)); err != nil {
			return Response{}, usage, fmt.Errorf("llm call to %s: %w (last error: %w)", c.cfg.BaseURL, err, lastErr)
		}
	}
	usage.Duration = time.Since(start)
	return Response{}, usage, lastErr
}

// Complete sends a system and a user message and returns the answer's text
// and what the call used (tokens, cost from the price table, model time).
// It satisfies the built-in agents' TextModel interface.
func (c *Client) Complete(ctx context.Context, system, user string) (string, schemas.Usage, error) {
	var msgs []Message
	if system != "" {
		msgs = append(msgs, Message{Role: RoleSystem, Content: system})
	}
	msgs = append(msgs, Message{Role: RoleUser, Content: user})
	resp, usage, err := c.Chat(ctx, Request{Messages: msgs})
	if err != nil {
		return "", usage.Report(), err
	}
	return resp.Message.Content, usage.Report(), nil
}

// classify turns a provider's error into one of the package's sentinels with
// the endpoint named and what to do.
func (c *Client) classify(err error, status int, timedOut bool) error {
	baseEnv, keyEnv := envOf(c.cfg.Provider)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("%w: %s answered HTTP %d: the key was refused; check %s (and %s): %v", ErrUnauthorized, c.cfg.BaseURL, status, keyEnv, baseEnv, apiMessage(err))
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

// statusOf is the HTTP status of a failed attempt: from the provider's
// error, else from the response the transport saw.
func statusOf(err error, h *hint) int {
	var apiErr *apiError
	if errors.As(err, &apiErr) && apiErr.status != 0 {
		return apiErr.status
	}
	return h.statusCode()
}

func apiMessage(err error) string {
	var apiErr *apiError
	if errors.As(err, &apiErr) && apiErr.message != "" {
		return apiErr.message
	}
	return err.Error()
}
