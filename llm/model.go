package llm

import (
	"context"
	"encoding/json"

	"github.com/agentmesh/agentmesh/schemas"
)

// Message is one message of a conversation in the mesh's own shape, the
// one conversation state stores: no provider's types reach a caller.
type Message = schemas.ChatMessage

// ToolCall is one tool call of an assistant message.
type ToolCall = schemas.ChatToolCall

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Tool is a function the model may call: its arguments are a JSON object
// matching Parameters, a JSON Schema.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// OutputSchema asks the model for an answer that is JSON matching Schema
// (OpenAI's response_format json_schema, Anthropic's output_config format).
type OutputSchema struct {
	Name   string // a short identifier, letters, digits, _ and -
	Schema json.RawMessage
}

// Request is one call of a chat model. An empty Model means the configured
// one.
type Request struct {
	Model    string
	Messages []Message
	Tools    []Tool
	Output   *OutputSchema // nil for free text
}

// Response is the model's answer: one assistant message, with text, tool
// calls or both.
type Response struct {
	ID           string
	Model        string // the model that answered, as the provider names it
	Message      Message
	FinishReason string // the provider's reason: "stop", "tool_calls", "end_turn", "tool_use", ...
}

// Delta is a piece of an answer as the model writes it: text, or a part of
// the arguments of the tool call numbered Call (0 for the answer's first
// call). ID and Name come with a call's first delta.
type Delta struct {
	Text      string
	Call      int
	ID        string
	Name      string
	Arguments string
}

// Model is a chat model in the mesh's own types. Chat waits for the whole
// answer; Stream calls onDelta with each piece as it arrives, in order and
// from one goroutine, then returns the same Response as Chat would. Both
// retry and trace as Client documents. Implementations are safe for
// concurrent use.
type Model interface {
	Chat(ctx context.Context, req Request) (Response, Usage, error)
	Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, Usage, error)
}

// provider speaks one vendor's protocol: one attempt of one request, with
// no retry, streaming when onDelta is not nil. A failure with an HTTP status
// is an *apiError.
type provider interface {
	name() string // gen_ai.provider.name
	send(ctx context.Context, req Request, onDelta func(Delta)) (Response, schemas.Tokens, error)
}

// apiError is a provider's answer with an error status.
type apiError struct {
	status  int
	message string
	err     error
}

func (e *apiError) Error() string { return e.err.Error() }
func (e *apiError) Unwrap() error { return e.err }
