package llm_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/agentmesh/agentmesh/llm"
)

// FuzzStreamDecode feeds any body to every provider's stream reader as a
// server-sent event stream: a call returns an answer or an error, never
// panics, and an answer is always the assistant's.
func FuzzStreamDecode(f *testing.F) {
	f.Add("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"x\",\"function\":{\"name\":\"A\",\"arguments\":\"{\"}}]}}]}\n\n")
	f.Add("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"A\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\"\"}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	f.Add("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\n\n")
	f.Add("data: not json\n\n")
	f.Add("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"},{\"functionCall\":{\"name\":\"A\",\"args\":null}}]}}]}\r\n\r\n")
	f.Add("data: {\"error\":{\"code\":503,\"message\":\"x\"}}\r\n\r\n")
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body.Load().(string))
	}))
	f.Cleanup(srv.Close)
	var clients []*llm.Client
	for _, cfg := range []llm.Config{
		{Provider: llm.ProviderOpenAI, BaseURL: srv.URL + "/v1", APIKey: "k", MaxRetries: -1},
		{Provider: llm.ProviderAnthropic, BaseURL: srv.URL, APIKey: "k", MaxRetries: -1},
		{Provider: llm.ProviderGemini, BaseURL: srv.URL, APIKey: "k", MaxRetries: -1},
	} {
		c, err := llm.New(cfg)
		if err != nil {
			f.Fatal(err)
		}
		clients = append(clients, c)
	}
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	f.Fuzz(func(t *testing.T, s string) {
		body.Store(s)
		for _, c := range clients {
			resp, _, err := c.Stream(context.Background(), req, func(llm.Delta) {})
			if err == nil && resp.Message.Role != llm.RoleAssistant {
				t.Fatalf("%s: answer without the assistant role: %+v", c.Provider(), resp)
			}
			if err != nil && errors.Is(err, context.Canceled) {
				t.Fatalf("%s: %v", c.Provider(), err)
			}
		}
	})
}
