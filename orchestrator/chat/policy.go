package chat

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
)

// WithGuard puts the turn's model calls and agent calls through g's
// policies (llm.Guard; llm.PolicyRulesFromEnv reads the common ones): a
// refused model call ends the turn failed with the reason; a refused agent
// call is not made, and the model reads the reason as the call's result
// (its record has code policy_refused). A chat turn cannot wait for an
// approval: a call a policy holds for approval is refused the same way,
// saying so, and runs only in a pipeline (see PromptAgent's WithGuard).
func WithGuard(g *llm.Guard) Option { return func(ch *Chat) { ch.guard = g } }

// guardTool asks the guard about an agent call; ok is false when the call
// must not be made, with the observation and record to use instead.
func (c *Chat) guardTool(ctx context.Context, taskID string, call *llm.ToolCall) (string, schemas.ToolCallRecord, bool) {
	err := c.guard.Tool(ctx, call)
	if err == nil {
		return "", schemas.ToolCallRecord{}, true
	}
	msg := err.Error()
	if errors.Is(err, llm.ErrApprovalRequired) {
		msg = fmt.Sprintf("%s; a chat turn cannot wait for it, so %s was not called (run it in a pipeline, where an approval step waits)", msg, call.Name)
	}
	rec := schemas.ToolCallRecord{Agent: call.Name, Arguments: call.Arguments, TaskID: taskID, Code: schemas.CodeRefused, Error: msg}
	return msg, rec, false
}
