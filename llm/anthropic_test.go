package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// A conversation with tool calls goes to the Messages API in its shape:
// system messages as system blocks, tool calls as tool_use blocks, the
// tool messages that answer them as one user message of tool_result
// blocks; the answer's tool_use blocks come back as tool calls, priced
// from the one price table.
func TestAnthropicSpeaksTheMessagesAPI(t *testing.T) {
	srv := llmtest.NewAnthropic(t, llmtest.Reply{
		ToolCalls: []llmtest.ToolCall{{ID: "toolu_9", Name: "FolderOrganizer", Arguments: `{"by":"category"}`}},
		Usage:     schemas.Tokens{Prompt: 1000, Completion: 100},
	})
	cfg := srv.Config()
	cfg.Model = "claude-sonnet-4-5-20250929"
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := sunsetRequest()
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Content: "Searching.", ToolCalls: []llm.ToolCall{
			{ID: "toolu_1", Name: "ImageSearch", Arguments: `{"query":"sunset"}`},
			{ID: "toolu_2", Name: "ImageSearch", Arguments: `{"query":"dusk"}`}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_1", Name: "ImageSearch", Content: "3 images"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_2", Name: "ImageSearch", Content: "2 images"},
	)
	resp, usage, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0] != (llm.ToolCall{ID: "toolu_9", Name: "FolderOrganizer", Arguments: `{"by":"category"}`}) ||
		resp.FinishReason != "tool_use" || resp.Message.Role != llm.RoleAssistant {
		t.Fatalf("answer = %+v", resp)
	}
	if usage.Tokens != (schemas.Tokens{Prompt: 1000, Completion: 100}) {
		t.Fatalf("usage = %+v", usage)
	}
	if want := (1000*3.0 + 100*15.0) / 1e6; usage.Cost != want {
		t.Errorf("cost = %v, want %v from claude-sonnet-4's price", usage.Cost, want)
	}

	got := srv.Requests()[0]
	if got.Key() != "test-key" || got.Body.Model != "claude-sonnet-4-5-20250929" || got.Body.MaxTokens != llm.DefaultMaxTokens || got.Body.Stream {
		t.Fatalf("request: key %q, model %q, max_tokens %d, stream %v", got.Key(), got.Body.Model, got.Body.MaxTokens, got.Body.Stream)
	}
	if len(got.Body.System) != 1 || got.Body.System[0].Text != "you organize images" {
		t.Errorf("system = %+v", got.Body.System)
	}
	if strings.Join(got.ToolNames(), ",") != "ImageSearch,FolderOrganizer" {
		t.Errorf("tools = %v", got.ToolNames())
	}
	var schema map[string]any
	if err := json.Unmarshal(got.Body.Tools[0].InputSchema, &schema); err != nil || schema["type"] != "object" ||
		schema["properties"].(map[string]any)["query"] == nil || schema["required"].([]any)[0] != "query" {
		t.Errorf("input_schema = %s", got.Body.Tools[0].InputSchema)
	}
	msgs := got.Body.Messages
	if len(msgs) != 3 || msgs[0].Role != "user" || msgs[1].Role != "assistant" || msgs[2].Role != "user" {
		t.Fatalf("messages = %+v", msgs)
	}
	asst := msgs[1].Content
	if len(asst) != 3 || asst[0].Type != "text" || asst[0].Text != "Searching." ||
		asst[1].Type != "tool_use" || asst[1].ID != "toolu_1" || asst[1].Name != "ImageSearch" || string(asst[1].Input) != `{"query":"sunset"}` ||
		asst[2].ID != "toolu_2" {
		t.Errorf("assistant blocks = %+v", asst)
	}
	results := msgs[2].Content
	if len(results) != 2 || results[0].Type != "tool_result" || results[0].ToolUseID != "toolu_1" || results[0].ResultText() != "3 images" ||
		results[1].ToolUseID != "toolu_2" || results[1].ResultText() != "2 images" {
		t.Errorf("tool results = %+v", results)
	}
}

// Errors keep the client's contract whatever the provider: 429 and 5xx
// (529, overloaded) are retried, a refused key is not and names the
// provider's variables.
func TestAnthropicErrors(t *testing.T) {
	srv := llmtest.NewAnthropic(t, llmtest.RateLimited("0"), llmtest.Error(529, "Overloaded"), llmtest.Answer("ok"))
	c, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	text, _, err := c.Complete(context.Background(), "", "hi")
	if err != nil || text != "ok" || len(srv.Requests()) != 3 {
		t.Fatalf("Complete = %q, %v after %d requests; want ok after 3", text, err, len(srv.Requests()))
	}

	srv = llmtest.NewAnthropic(t, llmtest.Unauthorized())
	c, _ = llm.New(srv.Config())
	_, _, err = c.Complete(context.Background(), "", "hi")
	if !errors.Is(err, llm.ErrUnauthorized) || len(srv.Requests()) != 1 {
		t.Fatalf("err = %v after %d requests, want ErrUnauthorized after 1", err, len(srv.Requests()))
	}
	for _, want := range []string{srv.URL(), "401", llm.EnvAnthropicAPIKey, "Incorrect API key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	srv = llmtest.NewAnthropic(t)
	c, _ = llm.New(srv.Config())
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
		Tools: []llm.Tool{{Name: "Broken", Parameters: json.RawMessage(`[1]`)}}}
	if _, _, err := c.Chat(context.Background(), req); !errors.Is(err, llm.ErrInvalidRequest) || !strings.Contains(err.Error(), `"Broken"`) {
		t.Fatalf("tool with a broken schema: err = %v, want ErrInvalidRequest naming the tool", err)
	}
}

// An output schema goes as each provider's native structured output.
func TestOutputSchemaIsSentNatively(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"category":{"type":"string"}},"required":["category"]}`)
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "categorize"}},
		Output: &llm.OutputSchema{Name: "categorization", Schema: schema}}

	oai := llmtest.New(t, llmtest.Answer(`{"category":"sunset"}`))
	c, _ := llm.New(oai.Config())
	if resp, _, err := c.Chat(context.Background(), req); err != nil || resp.Message.Content != `{"category":"sunset"}` {
		t.Fatalf("openai: %+v, %v", resp, err)
	}
	var body struct {
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(oai.Requests()[0].Raw, &body); err != nil || body.ResponseFormat.Type != "json_schema" ||
		body.ResponseFormat.JSONSchema.Name != "categorization" || !sameJSON(body.ResponseFormat.JSONSchema.Schema, schema) {
		t.Errorf("openai response_format = %+v", body.ResponseFormat)
	}

	ant := llmtest.NewAnthropic(t, llmtest.Answer(`{"category":"sunset"}`))
	c, _ = llm.New(ant.Config())
	if resp, _, err := c.Chat(context.Background(), req); err != nil || resp.Message.Content != `{"category":"sunset"}` {
		t.Fatalf("anthropic: %+v, %v", resp, err)
	}
	oc := ant.Requests()[0].Body.OutputConfig
	if oc == nil || oc.Format.Type != "json_schema" || !sameJSON(oc.Format.Schema, schema) {
		t.Errorf("anthropic output_config = %+v", oc)
	}
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	p, _ := json.Marshal(x)
	q, _ := json.Marshal(y)
	return string(p) == string(q)
}

func TestParseModel(t *testing.T) {
	for _, tc := range []struct{ in, provider, model string }{
		{"gpt-4o-mini", llm.ProviderOpenAI, "gpt-4o-mini"},
		{"openai:gpt-4.1", llm.ProviderOpenAI, "gpt-4.1"},
		{"anthropic:claude-sonnet-4-5", llm.ProviderAnthropic, "claude-sonnet-4-5"},
		{"gemini:gemini-2.5-flash", llm.ProviderGemini, "gemini-2.5-flash"},
		{"llama3.2:3b", llm.ProviderOpenAI, "llama3.2:3b"}, // Ollama's tags keep their colon
		{"", llm.ProviderOpenAI, ""},
	} {
		p, m, err := llm.ParseModel(tc.in)
		if err != nil || p != tc.provider || m != tc.model {
			t.Errorf("ParseModel(%q) = %q, %q, %v; want %q, %q", tc.in, p, m, err, tc.provider, tc.model)
		}
	}
	if _, _, err := llm.ParseModel("google:gemini-2.5-flash"); !errors.Is(err, llm.ErrInvalidConfig) || !strings.Contains(err.Error(), "gemini:gemini-2.5-flash") {
		t.Errorf("google: err = %v, want ErrInvalidConfig giving the gemini: prefix", err)
	}
}

func TestConfigFromEnvChoosesTheProvider(t *testing.T) {
	t.Setenv(llm.EnvModel, "anthropic:claude-haiku-4-5")
	t.Setenv(llm.EnvAnthropicAPIKey, "ant-key")
	t.Setenv(llm.EnvAnthropicBaseURL, "http://proxy.local:8080")
	t.Setenv(llm.EnvAPIKey, "openai-key")
	t.Setenv(llm.EnvBaseURL, "")
	t.Setenv(llm.EnvPrices, "")
	t.Setenv(llm.EnvTimeout, "")
	t.Setenv(llm.EnvMaxRetries, "")
	cfg, err := llm.ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Provider != llm.ProviderAnthropic || cfg.Model != "claude-haiku-4-5" || cfg.APIKey != "ant-key" || cfg.BaseURL != "http://proxy.local:8080" {
		t.Fatalf("cfg = %+v", cfg)
	}
	c, err := llm.New(cfg)
	if err != nil || c.Provider() != llm.ProviderAnthropic || c.Model() != "claude-haiku-4-5" {
		t.Fatalf("New = %v, %v", c, err)
	}

	t.Setenv(llm.EnvAnthropicAPIKey, "")
	t.Setenv(llm.EnvAnthropicBaseURL, "")
	cfg, _ = llm.ConfigFromEnv()
	if _, err := llm.New(cfg); !errors.Is(err, llm.ErrNotConfigured) || !strings.Contains(err.Error(), llm.EnvAnthropicAPIKey) {
		t.Fatalf("anthropic without a key: err = %v, want ErrNotConfigured naming %s (OpenAI's key is not Anthropic's)", err, llm.EnvAnthropicAPIKey)
	}
}

// A request may name its model with the client's provider prefix (a
// PromptAgent's config may); another provider's prefix is refused before
// anything is sent.
func TestRequestModelWithAProviderPrefix(t *testing.T) {
	srv := llmtest.NewAnthropic(t, llmtest.Answer("ok"))
	c, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	req := llm.Request{Model: "anthropic:claude-haiku-4-5", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	if _, usage, err := c.Chat(context.Background(), req); err != nil || srv.Requests()[0].Body.Model != "claude-haiku-4-5" || usage.Model != "claude-haiku-4-5" {
		t.Fatalf("Chat = %+v, %v; sent model %q", usage, err, srv.Requests()[0].Body.Model)
	}
	req.Model = "openai:gpt-4o-mini"
	_, _, err = c.Chat(context.Background(), req)
	if !errors.Is(err, llm.ErrInvalidRequest) || !strings.Contains(err.Error(), `"openai:gpt-4o-mini"`) || len(srv.Requests()) != 1 {
		t.Fatalf("another provider's model: err = %v after %d requests", err, len(srv.Requests()))
	}
}
