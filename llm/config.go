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
	EnvBaseURL          = "OPENAI_BASE_URL"
	EnvAPIKey           = "OPENAI_API_KEY"
	EnvAnthropicBaseURL = "ANTHROPIC_BASE_URL"
	EnvAnthropicAPIKey  = "ANTHROPIC_API_KEY"
	EnvGeminiBaseURL    = "GEMINI_BASE_URL"
	EnvGeminiAPIKey     = "GEMINI_API_KEY"
	EnvModel            = "AGENTMESH_MODEL"       // [provider:]model, such as anthropic:claude-sonnet-4-5 or gpt-4o-mini
	EnvPrices           = pricing.EnvPrices       // JSON: {"model": {"prompt": 0.15, "completion": 0.6}}, USD per million tokens
	EnvTimeout          = "AGENTMESH_LLM_TIMEOUT" // Go duration, per attempt
	EnvMaxRetries       = "AGENTMESH_LLM_RETRIES"
)

// Defaults applied by New to zero fields.
const (
	DefaultModel      = "gpt-4o-mini"
	DefaultBaseURL    = "https://api.openai.com/v1"
	DefaultTimeout    = 60 * time.Second
	DefaultMaxRetries = 3

	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultAnthropicModel   = "claude-sonnet-4-5"
	DefaultGeminiBaseURL    = "https://generativelanguage.googleapis.com"
	DefaultGeminiModel      = "gemini-2.5-flash"
	DefaultMaxTokens        = 4096 // Anthropic requires a limit on the answer's tokens; Gemini is sent it too
)

// Providers, the prefix of AGENTMESH_MODEL that chooses the protocol.
const (
	ProviderOpenAI    = "openai"    // OpenAI Chat Completions: OpenAI, Ollama, vLLM, llama.cpp, ...
	ProviderAnthropic = "anthropic" // Anthropic's Messages API
	ProviderGemini    = "gemini"    // the Gemini API (generateContent), over REST
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
	Provider   string // ProviderOpenAI (the default), ProviderAnthropic or ProviderGemini
	BaseURL    string
	APIKey     string
	Model      string
	Timeout    time.Duration // per attempt; the caller's ctx bounds the whole call
	MaxRetries int           // retries after the first attempt on 429, 5xx and connection errors; -1 for none
	Prices     pricing.Table
	MaxTokens  int // the answer's token limit sent to Anthropic and Gemini; DefaultMaxTokens when 0
}

// ConfigFromEnv reads AGENTMESH_MODEL, then the chosen provider's base URL
// and key (OPENAI_BASE_URL and OPENAI_API_KEY, ANTHROPIC_BASE_URL and
// ANTHROPIC_API_KEY, or GEMINI_BASE_URL and GEMINI_API_KEY), AGENTMESH_PRICES, AGENTMESH_LLM_TIMEOUT and
// AGENTMESH_LLM_RETRIES. A malformed value is an error naming the variable.
func ConfigFromEnv() (Config, error) {
	provider, model, err := ParseModel(strings.TrimSpace(os.Getenv(EnvModel)))
	if err != nil {
		return Config{}, err
	}
	baseEnv, keyEnv := envOf(provider)
	c := Config{
		Provider: provider,
		BaseURL:  strings.TrimSpace(os.Getenv(baseEnv)),
		APIKey:   strings.TrimSpace(os.Getenv(keyEnv)),
		Model:    model,
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

// ParseModel splits an AGENTMESH_MODEL value into its provider and model:
// "anthropic:claude-sonnet-4-5", "gemini:gemini-2.5-flash",
// "openai:gpt-4o-mini", or a bare model name for the OpenAI-compatible
// endpoint (where a colon may be part of the name, as in Ollama's
// "llama3.2:3b").
func ParseModel(s string) (provider, model string, err error) {
	prefix, rest, found := strings.Cut(s, ":")
	switch {
	case found && (prefix == ProviderOpenAI || prefix == ProviderAnthropic || prefix == ProviderGemini):
		return prefix, rest, nil
	case found && prefix == "google":
		return "", "", fmt.Errorf("%w: %s=%q: the Gemini API's prefix is %q (%s=gemini:%s)", ErrInvalidConfig, EnvModel, s, ProviderGemini, EnvModel, rest)
	default:
		return ProviderOpenAI, s, nil
	}
}

// envOf names the base URL and key variables of provider.
func envOf(provider string) (baseURL, apiKey string) {
	switch provider {
	case ProviderAnthropic:
		return EnvAnthropicBaseURL, EnvAnthropicAPIKey
	case ProviderGemini:
		return EnvGeminiBaseURL, EnvGeminiAPIKey
	}
	return EnvBaseURL, EnvAPIKey
}

// withDefaults fills zero fields. A Model with a provider prefix chooses
// the provider when Provider is empty.
func (c Config) withDefaults() (Config, error) {
	if c.Provider == "" {
		p, m, err := ParseModel(c.Model)
		if err != nil {
			return c, err
		}
		c.Provider, c.Model = p, m
	}
	switch c.Provider {
	case ProviderOpenAI:
		if c.BaseURL == "" {
			c.BaseURL = DefaultBaseURL
		}
		if c.Model == "" {
			c.Model = DefaultModel
		}
	case ProviderAnthropic:
		if c.BaseURL == "" {
			c.BaseURL = DefaultAnthropicBaseURL
		}
		if c.Model == "" {
			c.Model = DefaultAnthropicModel
		}
	case ProviderGemini:
		if c.BaseURL == "" {
			c.BaseURL = DefaultGeminiBaseURL
		}
		if c.Model == "" {
			c.Model = DefaultGeminiModel
		}
	default:
		return c, fmt.Errorf("%w: provider %q is not known; use %q, %q or %q (%s=anthropic:claude-sonnet-4-5)", ErrInvalidConfig, c.Provider, ProviderOpenAI, ProviderAnthropic, ProviderGemini, EnvModel)
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.MaxTokens <= 0 {
		c.MaxTokens = DefaultMaxTokens
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
	return c, nil
}

// price finds the price of model in the configured table (pricing.Table.Lookup).
func (c Config) price(model string) (Price, bool) { return c.Prices.Lookup(model) }
