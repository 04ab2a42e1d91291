package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/llm"
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

// ToolModel is a model that calls tools: one round of the model, with what
// it used (tokens, cost, model time). An *llm.Client is one, whichever
// provider it speaks. Implementations must be safe for concurrent use.
type ToolModel interface {
	Chat(ctx context.Context, req llm.Request) (llm.Response, llm.Usage, error)
}

// ToolModelFunc adapts a function to a ToolModel.
type ToolModelFunc func(ctx context.Context, req llm.Request) (llm.Response, llm.Usage, error)

// Chat calls f.
func (f ToolModelFunc) Chat(ctx context.Context, req llm.Request) (llm.Response, llm.Usage, error) {
	return f(ctx, req)
}

// WithTools gives the agent's model tools and the model that calls them:
// each task then runs a tool loop (model, tool calls, model, ...) until
// the model answers, at most max_tool_steps model calls.
func WithTools(model ToolModel, tools ...Tool) Option {
	return func(a *Agent) { a.toolModel, a.tools = model, tools }
}

// StepTool is the step name of a tool call of the tool loop: its journal
// key is <task>.tool.<n> (docs/durability.md).
const StepTool = "tool"

// runTools is the tool loop of one task, from msgs: it returns the model's
// final answer, the conversation with it, and the usage of every model
// call. output, when not nil, is the schema the answer must match. Tool
// calls run one after the other; each is reported as task progress.
func (a *Agent) runTools(ctx context.Context, model ToolModel, msgs []llm.Message, output *llm.OutputSchema) (llm.Message, []llm.Message, schemas.Usage, error) {
	byName := map[string]Tool{}
	defs := make([]llm.Tool, 0, len(a.tools))
	for _, t := range a.tools {
		byName[t.Name()] = t
		defs = append(defs, llm.Tool{Name: t.Name(), Description: t.Description(), Parameters: t.InputSchema()})
	}
	steps := a.cfg.MaxToolSteps
	if steps <= 0 {
		steps = DefaultMaxToolSteps
	}
	var total schemas.Usage
	for range steps {
		resp, usage, err := a.chat(ctx, model, llm.Request{Model: a.cfg.Model, Messages: msgs, Tools: defs, Output: output})
		total = total.Add(usage.Report())
		if err != nil {
			return llm.Message{}, msgs, total, err
		}
		msg := resp.Message
		msgs = append(msgs, msg)
		if len(msg.ToolCalls) == 0 {
			return msg, msgs, total, nil
		}
		for _, call := range msg.ToolCalls {
			refused, err := a.checkTool(ctx, &call)
			if err != nil {
				return llm.Message{}, msgs, total, err
			}
			out := refused
			if out == "" {
				// The call is a step of the task (schemas.Step): a
				// redelivered task reads what the tool answered and
				// does not call it again. The loop's model calls are
				// steps of their own (package llm).
				out, err = schemas.Step(ctx, StepTool, func(ctx context.Context, _ string) (string, error) {
					out := a.callTool(ctx, byName, call)
					return out, ctx.Err() // a call the task's end cut short is not its answer
				})
				if err != nil {
					return llm.Message{}, msgs, total, err
				}
			}
			if ctx.Err() != nil {
				return llm.Message{}, msgs, total, ctx.Err()
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: out})
		}
	}
	return llm.Message{}, msgs, total, fmt.Errorf("%w (%d): raise max_tool_steps or make the system prompt ask for an answer", ErrToolSteps, steps)
}

// callTool runs one tool call and returns what the model reads.
func (a *Agent) callTool(ctx context.Context, byName map[string]Tool, call llm.ToolCall) string {
	t, ok := byName[call.Name]
	if !ok {
		names := make([]string, 0, len(byName))
		for n := range byName {
			names = append(names, n)
		}
		return fmt.Sprintf("error: there is no tool %q; the tools are %s", call.Name, strings.Join(names, ", "))
	}
	agents.ReportProgress(ctx, "calling "+t.Name(), 0)
	args := json.RawMessage(call.Arguments)
	if !json.Valid(args) {
		return fmt.Sprintf("error: the arguments of %s are not JSON; send a JSON object", t.Name())
	}
	out, err := t.Call(ctx, args)
	if err != nil {
		return "error: " + err.Error()
	}
	return out
}
