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

func TestChatSendsToolsPerRequestAndAccountsCost(t *testing.T) {
	srv := llmtest.New(t, llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": "sunset"})))
	cfg := srv.Config()
	cfg.Model = "gpt-4o-mini"
	cfg.Prices = map[string]llm.Price{"gpt-4o-mini": {Prompt: 1, Completion: 2}}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tools := []llm.Tool{{Name: "ImageSearch", Parameters: json.RawMessage(`{"type":"object"}`)}}
	resp, usage, err := c.Chat(context.Background(), llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "find sunsets"}},
		Tools:    tools,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Message.ToolCalls; len(got) != 1 || got[0].Name != "ImageSearch" || got[0].Arguments != `{"query":"sunset"}` {
		t.Fatalf("tool calls = %+v", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Body.Model != "gpt-4o-mini" || strings.Join(reqs[0].ToolNames(), ",") != "ImageSearch" {
		t.Fatalf("request = %+v", reqs)
	}
	if auth := reqs[0].Header.Get("Authorization"); auth != "Bearer test-key" {
		t.Errorf("Authorization = %q", auth)
	}
	if usage.Tokens.Prompt != 100 || usage.Tokens.Completion != 20 || usage.Attempts != 1 {
		t.Errorf("usage = %+v", usage)
	}
	if want := (100*1.0 + 20*2.0) / 1e6; usage.Cost != want {
		t.Errorf("cost = %v, want %v", usage.Cost, want)
	}
}

func TestCompleteReturnsTextAndTokens(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Content: "two sunsets", Usage: schemas.Tokens{Prompt: 7, Completion: 3}})
	cfg := srv.Config()
	cfg.Prices = map[string]llm.Price{cfg.Model: {Prompt: 2, Completion: 4}}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	text, usage, err := c.Complete(context.Background(), "be brief", "summarize")
	if err != nil || text != "two sunsets" || usage.Tokens.Prompt != 7 || usage.Tokens.Completion != 3 {
		t.Fatalf("Complete = %q %+v %v", text, usage, err)
	}
	if want := (7*2 + 3*4) / 1e6; usage.Cost != want || usage.ModelMS < 0 {
		t.Fatalf("cost %v, model time %dms; want %v from the price table", usage.Cost, usage.ModelMS, want)
	}
	msgs := srv.Requests()[0].Body.Messages
	if len(msgs) != 2 || msgs[0].Role != "system" || msgs[0].Content != "be brief" || msgs[1].Content != "summarize" {
		t.Fatalf("messages = %+v", msgs)
	}
}

func TestRateLimitIsRetried(t *testing.T) {
	srv := llmtest.New(t, llmtest.RateLimited("0"), llmtest.Error(503, "overloaded"), llmtest.Answer("ok"))
	cfg := srv.Config()
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	text, _, err := c.Complete(context.Background(), "", "hi")
	if err != nil || text != "ok" {
		t.Fatalf("Complete = %q, %v", text, err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("requests = %d, want 3 (429, 503, 200)", n)
	}
}

func TestRetriesExhausted(t *testing.T) {
	srv := llmtest.New(t, llmtest.RateLimited("0"), llmtest.RateLimited("0"))
	cfg := srv.Config()
	cfg.MaxRetries = 1
	c, _ := llm.New(cfg)
	_, _, err := c.Complete(context.Background(), "", "hi")
	if !errors.Is(err, llm.ErrRateLimited) || !strings.Contains(err.Error(), srv.URL()) {
		t.Fatalf("err = %v, want ErrRateLimited naming %s", err, srv.URL())
	}
}

func TestUnauthorizedNamesEndpointAndIsNotRetried(t *testing.T) {
	srv := llmtest.New(t, llmtest.Unauthorized())
	c, _ := llm.New(srv.Config())
	_, _, err := c.Complete(context.Background(), "", "hi")
	if !errors.Is(err, llm.ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	for _, want := range []string{srv.URL(), "key was refused", "401", "OPENAI_API_KEY"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("requests = %d, a refused key must not be retried", n)
	}
}

func TestClientErrorIsNotRetried(t *testing.T) {
	srv := llmtest.New(t, llmtest.Error(400, "model not found"))
	c, _ := llm.New(srv.Config())
	_, _, err := c.Complete(context.Background(), "", "hi")
	if err == nil || !strings.Contains(err.Error(), "model not found") || len(srv.Requests()) != 1 {
		t.Fatalf("err = %v after %d requests", err, len(srv.Requests()))
	}
}

func TestNotConfigured(t *testing.T) {
	if _, err := llm.New(llm.Config{Model: "x"}); !errors.Is(err, llm.ErrNotConfigured) {
		t.Fatalf("err = %v", err)
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv(llm.EnvBaseURL, "http://localhost:11434/v1")
	t.Setenv(llm.EnvAPIKey, "")
	t.Setenv(llm.EnvModel, "llama3.2")
	t.Setenv(llm.EnvPrices, `{"llama3.2": {"prompt": 0.5, "completion": 1}}`)
	t.Setenv(llm.EnvTimeout, "")
	t.Setenv(llm.EnvMaxRetries, "")
	cfg, err := llm.ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Configured() || cfg.Model != "llama3.2" || cfg.Prices["llama3.2"] != (llm.Price{Prompt: 0.5, Completion: 1}) {
		t.Fatalf("cfg = %+v", cfg)
	}

	t.Setenv(llm.EnvBaseURL, "")
	cfg, _ = llm.ConfigFromEnv()
	if cfg.Configured() {
		t.Error("no key and no base URL must not count as configured")
	}

	t.Setenv(llm.EnvPrices, `{"gpt": 3}`)
	if _, err := llm.ConfigFromEnv(); !errors.Is(err, llm.ErrInvalidConfig) || !strings.Contains(err.Error(), llm.EnvPrices) {
		t.Fatalf("bad prices: err = %v", err)
	}
	t.Setenv(llm.EnvPrices, "")
	t.Setenv(llm.EnvTimeout, "soon")
	if _, err := llm.ConfigFromEnv(); err == nil || !strings.Contains(err.Error(), `"soon"`) {
		t.Fatalf("bad timeout: err = %v", err)
	}
}
