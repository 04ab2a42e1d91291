package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sort"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentmesh/agentmesh/schemas"
)

// openAIProvider speaks the OpenAI Chat Completions protocol through
// go-openai: OpenAI itself and every compatible server (Ollama, vLLM,
// llama.cpp). It is the only code of the mesh that knows go-openai's types.
type openAIProvider struct {
	api *openai.Client
}

func newOpenAI(cfg Config, doer hintDoer) *openAIProvider {
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = doer
	return &openAIProvider{api: openai.NewClientWithConfig(oc)}
}

func (*openAIProvider) name() string { return ProviderOpenAI }

func (p *openAIProvider) send(ctx context.Context, req Request, onDelta func(Delta)) (Response, schemas.Tokens, error) {
	oreq := openAIRequest(req)
	if onDelta == nil {
		resp, err := p.api.CreateChatCompletion(ctx, oreq)
		if err != nil {
			return Response{}, schemas.Tokens{}, openAIError(err)
		}
		if len(resp.Choices) == 0 {
			return Response{}, schemas.Tokens{}, ErrEmptyResponse
		}
		ch := resp.Choices[0]
		return Response{ID: resp.ID, Model: resp.Model, Message: fromOpenAI(ch.Message), FinishReason: string(ch.FinishReason)},
			schemas.Tokens{Prompt: resp.Usage.PromptTokens, Completion: resp.Usage.CompletionTokens}, nil
	}
	oreq.Stream = true
	oreq.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	stream, err := p.api.CreateChatCompletionStream(ctx, oreq)
	if err != nil {
		return Response{}, schemas.Tokens{}, openAIError(err)
	}
	defer stream.Close()
	var (
		out     Response
		tokens  schemas.Tokens
		choices int
		calls   = map[int]*ToolCall{}
	)
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Response{}, schemas.Tokens{}, openAIError(err)
		}
		if chunk.ID != "" {
			out.ID = chunk.ID
		}
		if chunk.Model != "" {
			out.Model = chunk.Model
		}
		if chunk.Usage != nil {
			tokens = schemas.Tokens{Prompt: chunk.Usage.PromptTokens, Completion: chunk.Usage.CompletionTokens}
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			choices++
			if ch.FinishReason != "" {
				out.FinishReason = string(ch.FinishReason)
			}
			if ch.Delta.Content != "" {
				out.Message.Content += ch.Delta.Content
				onDelta(Delta{Text: ch.Delta.Content})
			}
			for i, tc := range ch.Delta.ToolCalls {
				n := i
				if tc.Index != nil {
					n = *tc.Index
				}
				call := calls[n]
				if call == nil {
					call = &ToolCall{}
					calls[n] = call
				}
				if tc.ID != "" {
					call.ID = tc.ID
				}
				if tc.Function.Name != "" {
					call.Name += tc.Function.Name
				}
				call.Arguments += tc.Function.Arguments
				onDelta(Delta{Call: n, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
		}
	}
	if choices == 0 {
		return Response{}, tokens, ErrEmptyResponse
	}
	idx := make([]int, 0, len(calls))
	for n := range calls {
		idx = append(idx, n)
	}
	sort.Ints(idx)
	for _, n := range idx {
		out.Message.ToolCalls = append(out.Message.ToolCalls, *calls[n])
	}
	out.Message.Role = RoleAssistant
	return out, tokens, nil
}

// openAIRequest is req in go-openai's types.
func openAIRequest(req Request) openai.ChatCompletionRequest {
	out := openai.ChatCompletionRequest{Model: req.Model, Messages: make([]openai.ChatCompletionMessage, 0, len(req.Messages))}
	for _, m := range req.Messages {
		om := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		out.Messages = append(out.Messages, om)
	}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	if req.Output != nil {
		out.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type:       openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: req.Output.Name, Schema: json.RawMessage(req.Output.Schema)},
		}
	}
	return out
}

// fromOpenAI is an answer's message in the mesh's types.
func fromOpenAI(m openai.ChatCompletionMessage) Message {
	out := Message{Role: RoleAssistant, Content: m.Content}
	for _, tc := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return out
}

// openAIError wraps a go-openai error with its HTTP status and message.
func openAIError(err error) error {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return &apiError{status: apiErr.HTTPStatusCode, message: apiErr.Message, err: err}
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		msg := string(reqErr.Body)
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return &apiError{status: reqErr.HTTPStatusCode, message: msg, err: err}
	}
	return err
}
