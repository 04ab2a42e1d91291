package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentmesh/agentmesh/schemas"
)

// anthropicProvider speaks Anthropic's Messages API through the official
// SDK: system messages become the request's system blocks, tool calls
// tool_use blocks, tool messages tool_result blocks of a user message.
type anthropicProvider struct {
	api       anthropic.Client
	maxTokens int64
}

func newAnthropic(cfg Config, doer hintDoer) *anthropicProvider {
	api := anthropic.NewClient(
		option.WithoutEnvironmentDefaults(), // the mesh's configuration chose the key and URL
		option.WithAPIKey(cfg.APIKey),
		option.WithBaseURL(cfg.BaseURL+"/"),
		option.WithHTTPClient(doer),
		option.WithMaxRetries(0), // the Client retries, the same way for every provider
	)
	return &anthropicProvider{api: api, maxTokens: int64(cfg.MaxTokens)}
}

func (*anthropicProvider) name() string { return ProviderAnthropic }

func (p *anthropicProvider) send(ctx context.Context, req Request, onDelta func(Delta)) (Response, schemas.Tokens, error) {
	params, err := p.params(req)
	if err != nil {
		return Response{}, schemas.Tokens{}, err
	}
	if onDelta == nil {
		msg, err := p.api.Messages.New(ctx, params)
		if err != nil {
			return Response{}, schemas.Tokens{}, anthropicError(err)
		}
		return fromAnthropic(msg)
	}
	stream := p.api.Messages.NewStreaming(ctx, params)
	defer stream.Close()
	var (
		msg   anthropic.Message
		calls = map[int64]int{} // content block index to tool call number
	)
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return Response{}, schemas.Tokens{}, fmt.Errorf("llm: reading Anthropic's stream: %w", err)
		}
		switch ev.Type {
		case "content_block_start":
			if b := ev.ContentBlock; b.Type == "tool_use" {
				n := len(calls)
				calls[ev.Index] = n
				onDelta(Delta{Call: n, ID: b.ID, Name: b.Name})
			}
		case "content_block_delta":
			switch d := ev.Delta; d.Type {
			case "text_delta":
				if d.Text != "" {
					onDelta(Delta{Text: d.Text})
				}
			case "input_json_delta":
				if n, ok := calls[ev.Index]; ok && d.PartialJSON != "" {
					onDelta(Delta{Call: n, Arguments: d.PartialJSON})
				}
			}
		}
	}
	if err := stream.Err(); err != nil {
		return Response{}, schemas.Tokens{}, anthropicError(err)
	}
	return fromAnthropic(&msg)
}

// params is req as a Messages API request.
func (p *anthropicProvider) params(req Request) (anthropic.MessageNewParams, error) {
	params := anthropic.MessageNewParams{Model: anthropic.Model(req.Model), MaxTokens: p.maxTokens}
	var results []anthropic.ContentBlockParamUnion // tool results waiting for their user message
	flush := func() {
		if len(results) > 0 {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
			results = nil
		}
	}
	for _, m := range req.Messages {
		if m.Role == RoleTool {
			results = append(results, anthropic.NewToolResultBlock(m.ToolCallID, m.Content, false))
			continue
		}
		flush()
		switch m.Role {
		case RoleSystem:
			if m.Content != "" {
				params.System = append(params.System, anthropic.TextBlockParam{Text: m.Content})
			}
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, toolInput(tc.Arguments), tc.Name))
			}
			if len(blocks) > 0 {
				params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
			}
		default:
			if m.Content != "" {
				params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Content)))
			}
		}
	}
	flush()
	for _, t := range req.Tools {
		schema, err := toolSchema(t.Parameters)
		if err != nil {
			return params, fmt.Errorf("%w: the parameters of tool %q are not a JSON Schema object: %w", ErrInvalidRequest, t.Name, err)
		}
		tool := &anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: tool})
	}
	if req.Output != nil {
		var schema map[string]any
		if err := json.Unmarshal(req.Output.Schema, &schema); err != nil {
			return params, fmt.Errorf("%w: output schema %q is not a JSON object: %w", ErrInvalidRequest, req.Output.Name, err)
		}
		params.OutputConfig = anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: schema}}
	}
	return params, nil
}

// toolInput is a tool call's arguments as a tool_use block's input: the
// JSON object the model sent, or an empty one when it sent none or broken
// JSON (the tool's answer then says what was wrong).
func toolInput(args string) any {
	if json.Valid([]byte(args)) && len(args) > 0 && args[0] == '{' {
		return json.RawMessage(args)
	}
	return map[string]any{}
}

// toolSchema is a tool's JSON Schema as the SDK's input schema.
func toolSchema(raw json.RawMessage) (anthropic.ToolInputSchemaParam, error) {
	var out anthropic.ToolInputSchemaParam
	if len(raw) == 0 {
		return out, nil
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return out, err
	}
	out.Properties = doc["properties"]
	if req, ok := doc["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				out.Required = append(out.Required, s)
			}
		}
	}
	delete(doc, "type")
	delete(doc, "properties")
	delete(doc, "required")
	if len(doc) > 0 {
		out.ExtraFields = doc
	}
	return out, nil
}

// fromAnthropic is an answer in the mesh's types: its text blocks joined,
// its tool_use blocks as tool calls.
func fromAnthropic(msg *anthropic.Message) (Response, schemas.Tokens, error) {
	out := Response{ID: msg.ID, Model: string(msg.Model), FinishReason: string(msg.StopReason), Message: Message{Role: RoleAssistant}}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			out.Message.Content += b.Text
		case "tool_use":
			args := string(b.Input)
			if len(b.Input) == 0 {
				args = "{}"
			}
			out.Message.ToolCalls = append(out.Message.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	u := msg.Usage
	tokens := schemas.Tokens{Prompt: int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens), Completion: int(u.OutputTokens)}
	if msg.ID == "" && len(msg.Content) == 0 {
		return Response{}, tokens, ErrEmptyResponse
	}
	return out, tokens, nil
}

// anthropicError wraps an SDK error with its HTTP status and message.
func anthropicError(err error) error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		return &apiError{status: apiErr.StatusCode, message: apiErr.Message, err: err}
	}
	return err
}
