package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/llm"
)

// AnthropicServer is a running scripted endpoint of Anthropic's Messages
// API (POST /v1/messages), answering from the same script of Replies as
// Server: text becomes a text block, tool calls tool_use blocks, usage
// input_tokens and output_tokens (Usage.PromptTokens and
// Usage.CompletionTokens). A request with "stream": true is answered with
// the API's server-sent events: message_start, content_block_start, ping,
// content_block_delta (text_delta, input_json_delta), content_block_stop,
// message_delta with the stop reason and usage, message_stop.
type AnthropicServer struct {
	srv *httptest.Server
	script[AnthropicRequest]
}

// Key is the API key a request carried: its x-api-key header, else its
// bearer token (the SDK sends the key as one or the other).
func (r AnthropicRequest) Key() string {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// AnthropicRequest is one recorded Messages API request.
type AnthropicRequest struct {
	Header http.Header
	Raw    []byte
	Body   MessagesRequest
	At     time.Time
}

// MessagesRequest is the body of a Messages API request, as the server
// reads it.
type MessagesRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	System    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"system"`
	Messages []struct {
		Role    string         `json:"role"`
		Content []ContentBlock `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	OutputConfig *struct {
		Format struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
}

// ContentBlock is one block of a request message.
type ContentBlock struct {
	Type      string          `json:"type"` // text, tool_use, tool_result
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // a tool_result's: a string or text blocks
}

// ResultText is a tool_result block's content as text.
func (b ContentBlock) ResultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var blocks []ContentBlock
	_ = json.Unmarshal(b.Content, &blocks)
	for _, x := range blocks {
		s += x.Text
	}
	return s
}

// ToolNames lists the names of the tools offered in the request.
func (r AnthropicRequest) ToolNames() []string {
	var out []string
	for _, t := range r.Body.Tools {
		out = append(out, t.Name)
	}
	return out
}

// NewAnthropic starts a Messages API server answering with replies in
// order; it stops at the end of the test.
func NewAnthropic(t testing.TB, replies ...Reply) *AnthropicServer {
	t.Helper()
	s := &AnthropicServer{script: script[AnthropicRequest]{replies: append([]Reply(nil), replies...)}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.srv.Close()
		s.report(t)
	})
	return s
}

// URL is the base URL to give the client (the API's paths start with /v1).
func (s *AnthropicServer) URL() string { return s.srv.URL }

// Config is an llm.Config for this server: provider anthropic, a test key.
func (s *AnthropicServer) Config() llm.Config {
	return llm.Config{Provider: llm.ProviderAnthropic, BaseURL: s.URL(), APIKey: "test-key", Model: "claude-test", Timeout: 10 * time.Second}
}

func (s *AnthropicServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		s.fail(w, fmt.Sprintf("unexpected %s %s", r.Method, r.URL.Path), writeAnthropicError)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, "reading body: "+err.Error(), writeAnthropicError)
		return
	}
	req := AnthropicRequest{Header: r.Header.Clone(), Raw: raw, At: time.Now()}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		s.fail(w, "request body is not a Messages API request: "+err.Error(), writeAnthropicError)
		return
	}
	if r.Header.Get("X-Api-Key") == "" && r.Header.Get("Authorization") == "" || r.Header.Get("Anthropic-Version") == "" {
		s.fail(w, "request without a key (x-api-key or authorization) or without anthropic-version", writeAnthropicError)
		return
	}
	if req.Body.MaxTokens <= 0 || len(req.Body.Messages) == 0 {
		s.fail(w, fmt.Sprintf("max_tokens %d, %d messages: both are required", req.Body.MaxTokens, len(req.Body.Messages)), writeAnthropicError)
		return
	}
	reply, ok := s.next(req)
	if !ok {
		s.fail(w, fmt.Sprintf("script exhausted at request %d", len(s.Requests())), writeAnthropicError)
		return
	}
	s.write(w, req, reply)
}

// writeAnthropicError sends an error as the Messages API does.
func writeAnthropicError(w http.ResponseWriter, status int, msg string) {
	kind := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}[status]
	if kind == "" {
		kind = "api_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
}

// block is one content block of an answer.
type block struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

func (s *AnthropicServer) write(w http.ResponseWriter, req AnthropicRequest, reply Reply) {
	if writeCanned(w, reply, writeAnthropicError) {
		return
	}
	var blocks []block
	if reply.Content != "" {
		text := reply.Content
		blocks = append(blocks, block{Type: "text", Text: &text})
	}
	stop := "end_turn"
	for _, c := range reply.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%d", s.ids.Add(1))
		}
		input := json.RawMessage(c.Arguments)
		if !json.Valid(input) {
			input, _ = json.Marshal(c.Arguments)
		}
		blocks = append(blocks, block{Type: "tool_use", ID: id, Name: c.Name, Input: input})
		stop = "tool_use"
	}
	u := reply.usage()
	msgID := fmt.Sprintf("msg_%d", s.ids.Add(1))
	if req.Body.Stream {
		s.stream(w, req, reply, msgID, blocks, stop)
		return
	}
	if blocks == nil {
		blocks = []block{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": req.Body.Model, "content": blocks,
		"stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": u.PromptTokens, "output_tokens": u.CompletionTokens},
	})
}

// stream sends the answer as the Messages API's events.
func (s *AnthropicServer) stream(w http.ResponseWriter, req AnthropicRequest, reply Reply, msgID string, blocks []block, stop string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	event := func(name string, data map[string]any) {
		data["type"] = name
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		flush(w)
	}
	u := reply.usage()
	event("message_start", map[string]any{"message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": req.Body.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": u.PromptTokens, "output_tokens": 1},
	}})
	for i, b := range blocks {
		switch b.Type {
		case "text":
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			if i == 0 {
				event("ping", map[string]any{})
			}
			for j, p := range reply.pieces() {
				event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": p}})
				if j == 0 && reply.Gate != nil {
					<-reply.Gate
				}
			}
		case "tool_use":
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			for _, p := range halves(string(b.Input)) {
				event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
			}
		}
		event("content_block_stop", map[string]any{"index": i})
	}
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": u.CompletionTokens}})
	event("message_stop", map[string]any{})
}
