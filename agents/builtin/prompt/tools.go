package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/schemas"
)

// DefaultMaxToolSteps bounds the model calls of one task that has tools,
// when the config says nothing (max_tool_steps).
const DefaultMaxToolSteps = 8

// ErrToolSteps reports a task whose model kept calling tools past
// max_tool_steps.
var ErrToolSteps = errors.New("the model did not answer within max_tool_steps")

// Tool is a tool the agent's model may call, such as a tool of an MCP
// server (bridge/mcp's RemoteTool). Call returns the text the model reads;
// an error the tool reported is returned as an error and shown to the
// model, which may try again.
type Tool interface {
	Name() string
	Description() string
	InputSchema() json.RawMessage
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// ToolModel is a model that calls tools: one Chat Completions round, with
// what it used (tokens, cost, model time). Implementations must be safe
// for concurrent use.
type ToolModel interface {
	Chat(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, schemas.Usage, error)
}

// ToolModelFunc adapts a function to a ToolModel.
type ToolModelFunc func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, schemas.Usage, error)

// Chat calls f.
func (f ToolModelFunc) Chat(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, schemas.Usage, error) {
	return f(ctx, req)
}

// WithTools gives the agent's model tools and the model that calls them:
// each task then runs a tool loop (model, tool calls, model, ...) until
// the model answers, at most max_tool_steps model calls.
func WithTools(model ToolModel, tools ...Tool) Option {
	return func(a *Agent) { a.toolModel, a.tools = model, tools }
}

// runTools is the tool loop of one task: it returns the model's final
// answer and the usage of every model call. Tool calls run one after the
// other; each is reported as task progress.
func (a *Agent) runTools(ctx context.Context, user string) (string, schemas.Usage, error) {
	byName := map[string]Tool{}
	defs := make([]openai.Tool, 0, len(a.tools))
	for _, t := range a.tools {
		byName[t.Name()] = t
		defs = append(defs, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name(), Description: t.Description(), Parameters: t.InputSchema(),
		}})
	}
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: a.cfg.SystemPrompt},
		{Role: openai.ChatMessageRoleUser, Content: user},
	}
	steps := a.cfg.MaxToolSteps
	if steps <= 0 {
		steps = DefaultMaxToolSteps
	}
	var total schemas.Usage
	for range steps {
		resp, usage, err := a.toolModel.Chat(ctx, openai.ChatCompletionRequest{Model: a.cfg.Model, Messages: msgs, Tools: defs})
		total = total.Add(usage)
		if err != nil {
			return "", total, err
		}
		msg := resp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return msg.Content, total, nil
		}
		msgs = append(msgs, msg)
		for _, call := range msg.ToolCalls {
			out := a.callTool(ctx, byName, call)
			if ctx.Err() != nil {
				return "", total, ctx.Err()
			}
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: call.ID, Content: out})
		}
	}
	return "", total, fmt.Errorf("%w (%d): raise max_tool_steps or make the system prompt ask for an answer", ErrToolSteps, steps)
}

// callTool runs one tool call and returns what the model reads.
func (a *Agent) callTool(ctx context.Context, byName map[string]Tool, call openai.ToolCall) string {
	t, ok := byName[call.Function.Name]
	if !ok {
		names := make([]string, 0, len(byName))
		for n := range byName {
			names = append(names, n)
		}
		return fmt.Sprintf("error: there is no tool %q; the tools are %s", call.Function.Name, strings.Join(names, ", "))
	}
	agents.ReportProgress(ctx, "calling "+t.Name(), 0)
	args := json.RawMessage(call.Function.Arguments)
	if !json.Valid(args) {
		return fmt.Sprintf("error: the arguments of %s are not JSON; send a JSON object", t.Name())
	}
	out, err := t.Call(ctx, args)
	if err != nil {
		return "error: " + err.Error()
	}
	return out
}
