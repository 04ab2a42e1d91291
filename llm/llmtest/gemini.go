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

// GeminiServer is a running scripted endpoint of the Gemini API
// (POST /v1beta/models/MODEL:generateContent, and
// :streamGenerateContent?alt=sse), answering from the same script of
// Replies as Server: text becomes a text part, tool calls functionCall
// parts, usage promptTokenCount and candidatesTokenCount. A streamed answer
// sends its text in pieces, one chunk each, then its function calls whole,
// then a chunk with the finish reason and the usage, as Gemini does.
type GeminiServer struct {
	srv *httptest.Server
	script[GeminiRequest]
	embedded embedCounter // batchEmbedContents, answered with Embedding (embed.go)
}

// GeminiRequest is one recorded generateContent request.
type GeminiRequest struct {
	Header http.Header
	Raw    []byte
	Model  string // from the path
	Stream bool   // streamGenerateContent
	Body   GenerateContentRequest
	At     time.Time
}

// GenerateContentRequest is the body of a generateContent request, as the
// server reads it.
type GenerateContentRequest struct {
	Contents          []GeminiContent `json:"contents"`
	SystemInstruction *GeminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Description          string          `json:"description"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig *struct {
		MaxOutputTokens    int             `json:"maxOutputTokens"`
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

// GeminiContent is one content of a request: a role and its parts.
type GeminiContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text         string `json:"text"`
		FunctionCall *struct {
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"functionCall"`
		FunctionResponse *struct {
			ID       string         `json:"id"`
			Name     string         `json:"name"`
			Response map[string]any `json:"response"`
		} `json:"functionResponse"`
	} `json:"parts"`
}

// ToolNames lists the names of the functions declared in the request.
func (r GeminiRequest) ToolNames() []string {
	var out []string
	for _, t := range r.Body.Tools {
		for _, f := range t.FunctionDeclarations {
			out = append(out, f.Name)
		}
	}
	return out
}

// NewGemini starts a Gemini API server answering with replies in order; it
// stops at the end of the test.
func NewGemini(t testing.TB, replies ...Reply) *GeminiServer {
	t.Helper()
	s := &GeminiServer{script: script[GeminiRequest]{replies: append([]Reply(nil), replies...)}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.srv.Close()
		s.report(t)
	})
	return s
}

// URL is the base URL to give the client (the API's paths start with /v1beta).
func (s *GeminiServer) URL() string { return s.srv.URL }

// Config is an llm.Config for this server: provider gemini, a test key.
func (s *GeminiServer) Config() llm.Config {
	return llm.Config{Provider: llm.ProviderGemini, BaseURL: s.URL(), APIKey: "test-key", Model: "gemini-test", Timeout: 10 * time.Second}
}

func (s *GeminiServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, ":batchEmbedContents") {
		s.embed(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
	model, method, _ := strings.Cut(rest, ":")
	stream := method == "streamGenerateContent" && r.URL.Query().Get("alt") == "sse"
	if r.Method != http.MethodPost || !ok || model == "" || method != "generateContent" && !stream {
		s.fail(w, fmt.Sprintf("unexpected %s %s", r.Method, r.URL), writeGeminiError)
		return
	}
	if r.Header.Get("X-Goog-Api-Key") == "" {
		s.fail(w, "request without x-goog-api-key", writeGeminiError)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, "reading body: "+err.Error(), writeGeminiError)
		return
	}
	req := GeminiRequest{Header: r.Header.Clone(), Raw: raw, Model: model, Stream: stream, At: time.Now()}
	if err := json.Unmarshal(raw, &req.Body); err != nil || len(req.Body.Contents) == 0 {
		s.fail(w, fmt.Sprintf("request body is not a generateContent request with contents: %v", err), writeGeminiError)
		return
	}
	reply, ok := s.next(req)
	if !ok {
		s.fail(w, fmt.Sprintf("script exhausted at request %d", len(s.Requests())), writeGeminiError)
		return
	}
	s.write(w, req, reply)
}

// writeGeminiError sends an error as the Gemini API does.
func writeGeminiError(w http.ResponseWriter, status int, msg string) {
	name := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
		429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[status]
	if name == "" {
		name = "INTERNAL"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": name}})
}

func (s *GeminiServer) write(w http.ResponseWriter, req GeminiRequest, reply Reply) {
	if writeCanned(w, reply, writeGeminiError) {
		return
	}
	var calls []map[string]any
	for _, c := range reply.ToolCalls {
		args := json.RawMessage(c.Arguments)
		if !json.Valid(args) {
			args = json.RawMessage(`{}`)
		}
		call := map[string]any{"name": c.Name, "args": args}
		if c.ID != "" {
			call["id"] = c.ID
		}
		calls = append(calls, map[string]any{"functionCall": call})
	}
	u := reply.usage()
	usage := map[string]any{"promptTokenCount": u.PromptTokens, "candidatesTokenCount": u.CompletionTokens, "totalTokenCount": u.TotalTokens}
	id := fmt.Sprintf("resp-%d", s.ids.Add(1))
	chunk := func(parts []map[string]any, finish string, withUsage bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		c := map[string]any{"candidates": []any{cand}, "modelVersion": req.Model, "responseId": id}
		if withUsage {
			c["usageMetadata"] = usage
		}
		return c
	}
	if !req.Stream {
		parts := []map[string]any{}
		if reply.Content != "" {
			parts = append(parts, map[string]any{"text": reply.Content})
		}
		parts = append(parts, calls...)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(chunk(parts, "STOP", true))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	send := func(c map[string]any) {
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		flush(w)
	}
	for i, p := range reply.pieces() {
		send(chunk([]map[string]any{{"text": p}}, "", false))
		if i == 0 && reply.Gate != nil {
			<-reply.Gate
		}
	}
	if len(calls) > 0 {
		send(chunk(calls, "", false))
	}
	send(chunk([]map[string]any{}, "STOP", true))
}
