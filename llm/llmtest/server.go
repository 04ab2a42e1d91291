package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
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
	Usage     schemas.Tokens // defaults to 100 prompt and 20 completion tokens

	// Streamed answers (a request with "stream": true) send Content in
	// Chunks when set (their concatenation should be Content), else in two
	// halves, and each tool call's arguments in two halves. Gate, when not
	// nil, holds the rest of the stream after the first text chunk until it
	// is closed, so a test can see a delta arrive before the answer ends.
	Chunks []string
	Gate   <-chan struct{}
}

// pieces is how a streamed reply sends text: Chunks, else two halves.
func (r Reply) pieces() []string {
	if len(r.Chunks) > 0 {
		return r.Chunks
	}
	return halves(r.Content)
}

// halves splits s in two (one piece when it is too short to split).
func halves(s string) []string {
	if len(s) < 2 {
		if s == "" {
			return nil
		}
		return []string{s}
	}
	r := []rune(s)
	return []string{string(r[:len(r)/2]), string(r[len(r)/2:])}
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

// Server is a running scripted OpenAI Chat Completions endpoint. Replies
// are taken from the script in order; when it is empty the handler set with
// Handle answers; with neither, the server answers 500 and the test fails at
// cleanup. A request with "stream": true is answered with server-sent
// events as OpenAI sends them. /v1/embeddings is answered with Embedding
// of each input, outside the script.
type Server struct {
	srv *httptest.Server
	script[Request]
	embedded embedCounter // /v1/embeddings, answered with Embedding (embed.go)
}

// New starts a server answering with replies in order; it stops at the end of the test.
func New(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{script: script[Request]{replies: append([]Reply(nil), replies...)}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.srv.Close()
		s.report(t)
	})
	return s
}

// URL is the base URL to give the client (it ends in /v1).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Config is an llm.Config for this server with a test key and fast retries.
func (s *Server) Config() llm.Config {
	return llm.Config{BaseURL: s.URL(), APIKey: "test-key", Model: "test-model", Timeout: 10 * time.Second}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings" {
		s.embed(w, r)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.fail(w, fmt.Sprintf("unexpected %s %s", r.Method, r.URL.Path), writeError)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, "reading body: "+err.Error(), writeError)
		return
	}
	req := Request{Header: r.Header.Clone(), Raw: raw, At: time.Now()}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		s.fail(w, "request body is not a chat completion request: "+err.Error(), writeError)
		return
	}
	reply, ok := s.next(req)
	if !ok {
		s.fail(w, fmt.Sprintf("script exhausted at request %d", len(s.Requests())), writeError)
		return
	}
	s.write(w, req, reply)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "llmtest", "code": strconv.Itoa(status)}})
}

func (s *Server) write(w http.ResponseWriter, req Request, reply Reply) {
	if writeCanned(w, reply, writeError) {
		return
	}
	if req.Body.Stream {
		s.stream(w, req, reply)
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
	usage := reply.usage()
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

// usage is the reply's usage, 100 prompt and 20 completion tokens by default.
func (r Reply) usage() openai.Usage {
	u := r.Usage
	if u == (schemas.Tokens{}) {
		u = schemas.Tokens{Prompt: 100, Completion: 20}
	}
	return openai.Usage{PromptTokens: u.Prompt, CompletionTokens: u.Completion, TotalTokens: u.Prompt + u.Completion}
}

// stream answers a streamed request as OpenAI does: chat.completion.chunk
// events, the text in pieces, each tool call's id and name then its
// arguments in pieces, a chunk with the finish reason, a chunk with the
// usage when stream_options.include_usage asked for it, then [DONE].
func (s *Server) stream(w http.ResponseWriter, req Request, reply Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	id := fmt.Sprintf("chatcmpl-%d", s.ids.Add(1))
	send := func(choices []openai.ChatCompletionStreamChoice, usage *openai.Usage) {
		chunk := openai.ChatCompletionStreamResponse{ID: id, Object: "chat.completion.chunk", Created: time.Now().Unix(),
			Model: req.Body.Model, Choices: choices, Usage: usage}
		if choices == nil {
			chunk.Choices = []openai.ChatCompletionStreamChoice{}
		}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		flush(w)
	}
	delta := func(d openai.ChatCompletionStreamChoiceDelta) {
		send([]openai.ChatCompletionStreamChoice{{Index: 0, Delta: d}}, nil)
	}
	delta(openai.ChatCompletionStreamChoiceDelta{Role: openai.ChatMessageRoleAssistant})
	for i, p := range reply.pieces() {
		delta(openai.ChatCompletionStreamChoiceDelta{Content: p})
		if i == 0 && reply.Gate != nil {
			<-reply.Gate
		}
	}
	finish := openai.FinishReasonStop
	for n, c := range reply.ToolCalls {
		n := n
		callID := c.ID
		if callID == "" {
			callID = fmt.Sprintf("call_%d", s.ids.Add(1))
		}
		delta(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: &n, ID: callID, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name}}}})
		for _, p := range halves(c.Arguments) {
			delta(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: &n, Function: openai.FunctionCall{Arguments: p}}}})
		}
		finish = openai.FinishReasonToolCalls
	}
	send([]openai.ChatCompletionStreamChoice{{Index: 0, FinishReason: finish}}, nil)
	if req.Body.StreamOptions != nil && req.Body.StreamOptions.IncludeUsage {
		u := reply.usage()
		send(nil, &u)
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	flush(w)
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// writeCanned writes what a reply says in place of a model's answer (a
// Retry-After, a raw body, an error status, in the provider's error shape
// writeErr) and reports whether it did; false leaves the answer to write.
func writeCanned(w http.ResponseWriter, reply Reply, writeErr func(http.ResponseWriter, int, string)) bool {
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
		return true
	}
	if status != http.StatusOK {
		writeErr(w, status, reply.Message)
		return true
	}
	return false
}
