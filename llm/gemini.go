package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentmesh/agentmesh/schemas"
)

// geminiProvider speaks the Gemini API's REST protocol (generateContent and
// streamGenerateContent with server-sent events) with the standard library:
// system messages become the systemInstruction, assistant messages "model"
// contents with functionCall parts, tool messages functionResponse parts of
// a user content, tools functionDeclarations with a JSON Schema.
type geminiProvider struct {
	base      string
	key       string
	doer      hintDoer
	maxTokens int
}

func newGemini(cfg Config, doer hintDoer) *geminiProvider {
	return &geminiProvider{base: cfg.BaseURL, key: cfg.APIKey, doer: doer, maxTokens: cfg.MaxTokens}
}

func (*geminiProvider) name() string { return ProviderGemini }

// The wire types of the Gemini API, as much of them as the mesh uses.
type (
	geminiRequest struct {
		Contents          []geminiContent   `json:"contents"`
		SystemInstruction *geminiContent    `json:"systemInstruction,omitempty"`
		Tools             []geminiTools     `json:"tools,omitempty"`
		GenerationConfig  *geminiGeneration `json:"generationConfig,omitempty"`
	}
	geminiContent struct {
		Role  string       `json:"role,omitempty"`
		Parts []geminiPart `json:"parts"`
	}
	geminiPart struct {
		Text             string                  `json:"text,omitempty"`
		Thought          bool                    `json:"thought,omitempty"`
		FunctionCall     *geminiFunctionCall     `json:"functionCall,omitempty"`
		FunctionResponse *geminiFunctionResponse `json:"functionResponse,omitempty"`
	}
	geminiFunctionCall struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args,omitempty"`
	}
	geminiFunctionResponse struct {
		ID       string         `json:"id,omitempty"`
		Name     string         `json:"name"`
		Response map[string]any `json:"response"`
	}
	geminiTools struct {
		FunctionDeclarations []geminiFunction `json:"functionDeclarations"`
	}
	geminiFunction struct {
		Name                 string          `json:"name"`
		Description          string          `json:"description,omitempty"`
		ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
	}
	geminiGeneration struct {
		MaxOutputTokens    int             `json:"maxOutputTokens,omitempty"`
		ResponseMimeType   string          `json:"responseMimeType,omitempty"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	}
	geminiResponse struct {
		Candidates []struct {
			Content      geminiContent `json:"content"`
			FinishReason string        `json:"finishReason"`
		} `json:"candidates"`
		UsageMetadata struct {
			PromptTokenCount     int `json:"promptTokenCount"`
			CandidatesTokenCount int `json:"candidatesTokenCount"`
			ThoughtsTokenCount   int `json:"thoughtsTokenCount"`
		} `json:"usageMetadata"`
		ModelVersion string `json:"modelVersion"`
		ResponseID   string `json:"responseId"`
		Error        *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"` // an error sent in place of a chunk
	}
	geminiError struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
)

// post sends body to the model's method on the Gemini API; an answer
// other than 200 is an *apiError with the API's own message.
func (p *geminiProvider) post(ctx context.Context, model, method string, body []byte) (*http.Response, error) {
	u := fmt.Sprintf("%s/v1beta/models/%s:%s", p.base, url.PathEscape(model), method)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("x-goog-api-key", p.key)
	hresp, err := p.doer.Do(hreq)
	if err != nil {
		return nil, err
	}
	if hresp.StatusCode != http.StatusOK {
		defer hresp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(hresp.Body, 64<<10))
		var e geminiError
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		msg = schemas.Clip(msg, 200)
		return nil, &apiError{status: hresp.StatusCode, message: msg, err: fmt.Errorf("gemini: HTTP %d: %s", hresp.StatusCode, msg)}
	}
	return hresp, nil
}

func (p *geminiProvider) send(ctx context.Context, req Request, onDelta func(Delta)) (Response, schemas.Tokens, error) {
	body, err := geminiBody(req, p.maxTokens)
	if err != nil {
		return Response{}, schemas.Tokens{}, err
	}
	method := "generateContent"
	if onDelta != nil {
		method = "streamGenerateContent?alt=sse"
	}
	hresp, err := p.post(ctx, req.Model, method, body)
	if err != nil {
		return Response{}, schemas.Tokens{}, err
	}
	defer hresp.Body.Close()
	var acc geminiAnswer
	if onDelta == nil {
		var r geminiResponse
		if err := json.NewDecoder(hresp.Body).Decode(&r); err != nil {
			return Response{}, schemas.Tokens{}, fmt.Errorf("gemini: the answer is not JSON: %w", err)
		}
		acc.add(r, nil)
		return acc.response()
	}
	sc := bufio.NewScanner(hresp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue // blank lines between events, comments
		}
		var r geminiResponse
		if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &r); err != nil {
			return Response{}, schemas.Tokens{}, fmt.Errorf("gemini: a streamed chunk is not JSON: %w", err)
		}
		if e := r.Error; e != nil {
			return Response{}, schemas.Tokens{}, &apiError{status: e.Code, message: e.Message, err: fmt.Errorf("gemini: error in the stream: %d %s", e.Code, e.Message)}
		}
		acc.add(r, onDelta)
	}
	if err := sc.Err(); err != nil {
		return Response{}, schemas.Tokens{}, fmt.Errorf("gemini: reading the stream: %w", err)
	}
	return acc.response()
}

// geminiAnswer puts an answer together from one response or the chunks of
// a stream (text parts are pieces of the text, a functionCall part is a
// whole call).
type geminiAnswer struct {
	out    Response
	tokens schemas.Tokens
	seen   bool
}

func (a *geminiAnswer) add(r geminiResponse, onDelta func(Delta)) {
	if r.ResponseID != "" {
		a.out.ID = r.ResponseID
	}
	if r.ModelVersion != "" {
		a.out.Model = r.ModelVersion
	}
	if u := r.UsageMetadata; u.PromptTokenCount+u.CandidatesTokenCount > 0 {
		a.tokens = schemas.Tokens{Prompt: u.PromptTokenCount, Completion: u.CandidatesTokenCount + u.ThoughtsTokenCount}
	}
	if len(r.Candidates) == 0 {
		return
	}
	c := r.Candidates[0]
	a.seen = true
	if c.FinishReason != "" {
		a.out.FinishReason = c.FinishReason
	}
	for _, part := range c.Content.Parts {
		switch {
		case part.Thought:
		case part.FunctionCall != nil:
			args := string(part.FunctionCall.Args)
			if args == "" || args == "null" {
				args = "{}"
			}
			n := len(a.out.Message.ToolCalls)
			a.out.Message.ToolCalls = append(a.out.Message.ToolCalls, ToolCall{ID: part.FunctionCall.ID, Name: part.FunctionCall.Name, Arguments: args})
			if onDelta != nil {
				onDelta(Delta{Call: n, ID: part.FunctionCall.ID, Name: part.FunctionCall.Name, Arguments: args})
			}
		case part.Text != "":
			a.out.Message.Content += part.Text
			if onDelta != nil {
				onDelta(Delta{Text: part.Text})
			}
		}
	}
}

func (a *geminiAnswer) response() (Response, schemas.Tokens, error) {
	if !a.seen {
		return Response{}, a.tokens, ErrEmptyResponse
	}
	a.out.Message.Role = RoleAssistant
	return a.out, a.tokens, nil
}

// geminiBody is req as a generateContent request.
func geminiBody(req Request, maxTokens int) ([]byte, error) {
	var (
		out   geminiRequest
		names = map[string]string{} // tool call id to tool name, for functionResponse
	)
	var results []geminiPart // function responses waiting for their user content
	flush := func() {
		if len(results) > 0 {
			out.Contents = append(out.Contents, geminiContent{Role: "user", Parts: results})
			results = nil
		}
	}
	for _, m := range req.Messages {
		if m.Role == RoleTool {
			name := m.Name
			if name == "" {
				name = names[m.ToolCallID]
			}
			results = append(results, geminiPart{FunctionResponse: &geminiFunctionResponse{ID: m.ToolCallID, Name: name,
				Response: map[string]any{"content": m.Content}}})
			continue
		}
		flush()
		switch m.Role {
		case RoleSystem:
			if out.SystemInstruction == nil {
				out.SystemInstruction = &geminiContent{}
			}
			out.SystemInstruction.Parts = append(out.SystemInstruction.Parts, geminiPart{Text: m.Content})
		case RoleAssistant:
			c := geminiContent{Role: "model"}
			if m.Content != "" {
				c.Parts = append(c.Parts, geminiPart{Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				names[tc.ID] = tc.Name
				args := json.RawMessage(tc.Arguments)
				if !json.Valid(args) || len(args) == 0 || args[0] != '{' {
					args = json.RawMessage(`{}`)
				}
				c.Parts = append(c.Parts, geminiPart{FunctionCall: &geminiFunctionCall{ID: tc.ID, Name: tc.Name, Args: args}})
			}
			if len(c.Parts) > 0 {
				out.Contents = append(out.Contents, c)
			}
		default:
			if m.Content != "" {
				out.Contents = append(out.Contents, geminiContent{Role: "user", Parts: []geminiPart{{Text: m.Content}}})
			}
		}
	}
	flush()
	if len(req.Tools) > 0 {
		var decls []geminiFunction
		for _, t := range req.Tools {
			if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
				return nil, fmt.Errorf("%w: the parameters of tool %q are not JSON", ErrInvalidRequest, t.Name)
			}
			decls = append(decls, geminiFunction{Name: t.Name, Description: t.Description, ParametersJSONSchema: t.Parameters})
		}
		out.Tools = []geminiTools{{FunctionDeclarations: decls}}
	}
	out.GenerationConfig = &geminiGeneration{MaxOutputTokens: maxTokens}
	if req.Output != nil {
		if !json.Valid(req.Output.Schema) {
			return nil, fmt.Errorf("%w: output schema %q is not JSON", ErrInvalidRequest, req.Output.Name)
		}
		out.GenerationConfig.ResponseMimeType = "application/json"
		out.GenerationConfig.ResponseJSONSchema = req.Output.Schema
	}
	return json.Marshal(out)
}
