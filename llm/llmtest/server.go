package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentmesh/agentmesh/llm"
)

// Reply is one scripted response. A non-zero Status other than 200 sends an
// OpenAI-style error body with Message; Body, when set, is sent verbatim.
type Reply struct {
	Status     int
	RetryAfter string // Retry-After header value, e.g. "1"
	Message    string // error message for a non-200 status
	Body       string // raw body, sent as it is (for malformed responses)

	Content   string
	ToolCalls []ToolCall
	Usage     openai.Usage // defaults to 100 prompt and 20 completion tokens
}

// ToolCall is one tool call in a scripted reply. Arguments is sent as it is,
// so it may be malformed JSON on purpose.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Answer is a final assistant message.
func Answer(text string) Reply { return Reply{Content: text} }

// Calls is an assistant message with tool calls.
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Call is a tool call of name with args marshalled to JSON (a string is sent verbatim).
func Call(name string, args any) ToolCall {
	var s string
	switch a := args.(type) {
	case string:
		s = a
	case nil:
		s = "{}"
	default:
		b, err := json.Marshal(a)
		if err != nil {
			panic(fmt.Sprintf("llmtest.Call(%s): %v", name, err))
		}
		s = string(b)
	}
	return ToolCall{Name: name, Arguments: s}
}

// Error is an HTTP error reply.
func Error(status int, message string) Reply { return Reply{Status: status, Message: message} }

// RateLimited is a 429 reply with a Retry-After header.
func RateLimited(retryAfter string) Reply {
	return Reply{Status: http.StatusTooManyRequests, RetryAfter: retryAfter, Message: "Rate limit reached, retry later"}
}

// Unauthorized is a 401 reply as OpenAI sends it for a bad key.
func Unauthorized() Reply {
	return Reply{Status: http.StatusUnauthorized, Message: "Incorrect API key provided"}
}

// Request is one recorded request.
type Request struct {
	Header http.Header
	Raw    []byte
	Body   openai.ChatCompletionRequest
	At     time.Time
}

// ToolNames lists the names of the tools offered in the request.
func (r Request) ToolNames() []string {
	var out []string
	for _, t := range r.Body.Tools {
		if t.Function != nil {
			out = append(out, t.Function.Name)
		}
	}
	return out
}

// Tool returns the offered tool called name.
func (r Request) Tool(name string) (openai.FunctionDefinition, bool) {
	for _, t := range r.Body.Tools {
		if t.Function != nil && t.Function.Name == name {
			return *t.Function, true
		}
	}
	return openai.FunctionDefinition{}, false
}

// MessagesOf returns the messages with role.
func (r Request) MessagesOf(role string) []openai.ChatCompletionMessage {
	var out []openai.ChatCompletionMessage
	for _, m := range r.Body.Messages {
		if m.Role == role {
			out = append(out, m)
		}
	}
	return out
}

// Server is a running scripted endpoint. Replies are taken from the script
// in order; when it is empty the handler set with Handle answers; with
// neither, the server answers 500 and the test fails at cleanup.
type Server struct {
	srv *httptest.Server

	mu         sync.Mutex
	script     []Reply
	handler    func(Request) Reply
	requests   []Request
	unexpected []string
	ids        atomic.Int64
}

// New starts a server answering with replies in order; it stops at the end of the test.
func New(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{script: append([]Reply(nil), replies...)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.srv.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, u := range s.unexpected {
			t.Errorf("llmtest: %s", u)
		}
	})
	return s
}

// URL is the base URL to give the client (it ends in /v1).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Config is an llm.Config for this server with a test key and fast retries.
func (s *Server) Config() llm.Config {
	return llm.Config{BaseURL: s.URL(), APIKey: "test-key", Model: "test-model", Timeout: 10 * time.Second}
}

// Enqueue appends replies to the script.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// Handle sets the function that answers once the script is empty. It may be
// called concurrently, so it must be safe for that.
func (s *Server) Handle(fn func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = fn
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Remaining is the number of scripted replies not yet sent.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.fail(w, fmt.Sprintf("unexpected %s %s", r.Method, r.URL.Path))
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, "reading body: "+err.Error())
		return
	}
	req := Request{Header: r.Header.Clone(), Raw: raw, At: time.Now()}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		s.fail(w, "request body is not a chat completion request: "+err.Error())
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var reply Reply
	var ok bool
	if len(s.script) > 0 {
		reply, s.script, ok = s.script[0], s.script[1:], true
	}
	handler := s.handler
	s.mu.Unlock()
	if !ok {
		if handler == nil {
			s.fail(w, fmt.Sprintf("script exhausted at request %d", len(s.Requests())))
			return
		}
		reply = handler(req)
	}
	s.write(w, req, reply)
}

func (s *Server) fail(w http.ResponseWriter, msg string) {
	s.mu.Lock()
	s.unexpected = append(s.unexpected, msg)
	s.mu.Unlock()
	writeError(w, http.StatusInternalServerError, "llmtest: "+msg)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "llmtest", "code": strconv.Itoa(status)}})
}

func (s *Server) write(w http.ResponseWriter, req Request, reply Reply) {
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	if reply.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, reply.Body)
		return
	}
	if status != http.StatusOK {
		writeError(w, status, reply.Message)
		return
	}
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: reply.Content}
	finish := openai.FinishReasonStop
	for _, c := range reply.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", s.ids.Add(1))
		}
		msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: id, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
		finish = openai.FinishReasonToolCalls
	}
	usage := reply.Usage
	if usage == (openai.Usage{}) {
		usage = openai.Usage{PromptTokens: 100, CompletionTokens: 20}
	}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	resp := openai.ChatCompletionResponse{
		ID:      fmt.Sprintf("chatcmpl-%d", s.ids.Add(1)),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   req.Body.Model,
		Choices: []openai.ChatCompletionChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:   usage,
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
