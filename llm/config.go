package llm

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/llm/pricing"
)

// Environment variables read by ConfigFromEnv.
const (
	EnvBaseURL    = "OPENAI_BASE_URL"
	EnvAPIKey     = "OPENAI_API_KEY"
	EnvModel      = "AGENTMESH_MODEL"
	EnvPrices     = pricing.EnvPrices       // JSON: {"model": {"prompt": 0.15, "completion": 0.6}}, USD per million tokens
	EnvTimeout    = "AGENTMESH_LLM_TIMEOUT" // Go duration, per attempt
	EnvMaxRetries = "AGENTMESH_LLM_RETRIES"
)

// Defaults applied by New to zero fields.
const (
	DefaultModel      = "gpt-4o-mini"
	DefaultBaseURL    = "https://api.openai.com/v1"
	DefaultTimeout    = 60 * time.Second
	DefaultMaxRetries = 3
)

// Price is what a model costs, in US dollars per million tokens: the
// shared table's type (package llm/pricing).
type Price = pricing.Price

// DefaultPrices is the built-in price table, pricing.Default. Models not in
// it (local models served by Ollama, vLLM or llama.cpp) cost nothing unless
// the user prices them in Config.Prices or AGENTMESH_PRICES.
func DefaultPrices() pricing.Table { return pricing.Default() }

// Config configures a Client. Zero fields take the defaults above; Prices
// overrides or extends DefaultPrices entry by entry.
type Config struct {
	BaseURL    string
	APIKey     string
	Model      string
	Timeout    time.Duration // per attempt; the caller's ctx bounds the whole call
	MaxRetries int           // retries after the first attempt on 429, 5xx and connection errors; -1 for none
	Prices     pricing.Table
}

// Configured reports whether an LLM endpoint is set at all: an API key, a
// base URL, or both. When it is false the orchestrator uses its offline planner.
func (c Config) Configured() bool { return c.APIKey != "" || c.BaseURL != "" }

// ConfigFromEnv reads OPENAI_BASE_URL, OPENAI_API_KEY, AGENTMESH_MODEL,
// AGENTMESH_PRICES, AGENTMESH_LLM_TIMEOUT and AGENTMESH_LLM_RETRIES. A
// malformed value is an error naming the variable.
func ConfigFromEnv() (Config, error) {
	c := Config{
		BaseURL: strings.TrimSpace(os.Getenv(EnvBaseURL)),
		APIKey:  strings.TrimSpace(os.Getenv(EnvAPIKey)),
		Model:   strings.TrimSpace(os.Getenv(EnvModel)),
	}
	if s := os.Getenv(EnvPrices); s != "" {
		prices, err := pricing.Parse(s)
		if err != nil {
			return c, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		c.Prices = prices
	}
	if s := os.Getenv(EnvTimeout); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("%w: %s=%q is not a positive duration such as 90s", ErrInvalidConfig, EnvTimeout, s)
		}
		c.Timeout = d
	}
	if s := os.Getenv(EnvMaxRetries); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return c, fmt.Errorf("%w: %s=%q is not a count of retries (0 or more)", ErrInvalidConfig, EnvMaxRetries, s)
		}
		if n == 0 {
			n = -1
		}
		c.MaxRetries = n
	}
	return c, nil
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	c.Prices = pricing.Default().With(c.Prices)
	return c
}

// price finds the price of model in the configured table (pricing.Table.Lookup).
func (c Config) price(model string) (Price, bool) { return c.Prices.Lookup(model) }
