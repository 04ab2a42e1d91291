package llm

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmesh/agentmesh/schemas"
)

// Action is what a policy did with a model call, an answer or a tool call.
type Action string

// Actions of a Decision.
const (
	Allow    Action = ""         // go on unchanged
	Rewrite  Action = "rewrite"  // go on with what the policy changed
	Redact   Action = "redact"   // go on with what the policy redacted: a rewrite that hides text (PolicyRules.Redact)
	Refuse   Action = "refuse"   // do not go on; Reason says why, to the model and the user
	Approval Action = "approval" // a tool call that waits for a person's approval
)

// Decision is a policy's answer.
type Decision struct {
	Action Action
	Reason string
}

// Policy is middleware around model calls and tool calls: it sees each
// request before the model does, each answer before the caller does, and
// each tool or agent call the model makes before it runs. It may allow,
// refuse with a reason, rewrite what it is given in place (redact), or
// ask for a person's approval of a tool call. Implementations must be safe
// for concurrent use; PolicyFuncs adapts functions.
type Policy interface {
	Name() string
	Request(ctx context.Context, req *Request) Decision
	Response(ctx context.Context, resp *Response) Decision
	Tool(ctx context.Context, call *ToolCall) Decision
}

// PolicyFuncs is a Policy of functions; a nil function allows.
type PolicyFuncs struct {
	ID         string
	OnRequest  func(ctx context.Context, req *Request) Decision
	OnResponse func(ctx context.Context, resp *Response) Decision
	OnTool     func(ctx context.Context, call *ToolCall) Decision
	// Hold is how many bytes of a streamed answer OnResponse may need to
	// see past a space to decide (a pattern that matches across spaces):
	// the guard holds back that much text (StreamHolder).
	Hold int
}

// StreamHolder is a Policy whose decisions about an answer may depend on
// text across spaces: the guard streams an answer a word at a time, and
// holds back StreamHold bytes more (the longest such policy's), so that a
// match split between two pieces comes to the policy whole.
type StreamHolder interface {
	StreamHold() int
}

// StreamHold is f.Hold.
func (f PolicyFuncs) StreamHold() int { return f.Hold }

// Name is f.ID.
func (f PolicyFuncs) Name() string { return f.ID }

// Request calls OnRequest.
func (f PolicyFuncs) Request(ctx context.Context, req *Request) Decision {
	if f.OnRequest == nil {
		return Decision{}
	}
	return f.OnRequest(ctx, req)
}

// Response calls OnResponse.
func (f PolicyFuncs) Response(ctx context.Context, resp *Response) Decision {
	if f.OnResponse == nil {
		return Decision{}
	}
	return f.OnResponse(ctx, resp)
}

// Tool calls OnTool.
func (f PolicyFuncs) Tool(ctx context.Context, call *ToolCall) Decision {
	if f.OnTool == nil {
		return Decision{}
	}
	return f.OnTool(ctx, call)
}

// RefusedError is a refusal by a policy. errors.Is matches ErrRefused and
// the code policy_refused.
type RefusedError struct {
	Policy string
	Target string // "model call", "answer", or the tool's name
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s refused by policy %s: %s", e.Target, e.Policy, e.Reason)
}

// Is matches ErrRefused and a ResultError of code policy_refused.
func (e *RefusedError) Is(target error) bool {
	if target == ErrRefused {
		return true
	}
	var re *schemas.ResultError
	return errors.As(target, &re) && re.Code == schemas.CodeRefused
}

// ApprovalError is a tool call a policy holds until a person approves it.
// errors.Is matches ErrApprovalRequired.
type ApprovalError struct {
	Policy string
	Tool   string
	Reason string
}

func (e *ApprovalError) Error() string {
	return fmt.Sprintf("calling %s needs a person's approval (policy %s): %s", e.Tool, e.Policy, e.Reason)
}

// Unwrap lets errors.Is match ErrApprovalRequired.
func (e *ApprovalError) Unwrap() error { return ErrApprovalRequired }
