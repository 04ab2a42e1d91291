package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
)

// WithGuard puts the turn's model calls and agent calls through g's
// policies (llm.Guard; llm.PolicyRulesFromEnv reads the common ones): a
// refused model call ends the turn failed with the reason; a refused agent
// call is not made, and the model reads the reason as the call's result
// (its record has code policy_refused). An agent call a policy holds for
// approval is not made either: the turn ends input_required asking the
// user (as when an agent asks for approval), and a next message that
// approves (yes, y, ok, approve, approved) lets the model make that same
// call, with the same arguments, in the turn that goes on.
func WithGuard(g *llm.Guard) Option { return func(ch *Chat) { ch.guard = g } }

// guardTool asks the guard about an agent call; ok is false when the call
// must not be made, with the observation and record to use instead.
func (c *Chat) guardTool(ctx context.Context, s *session, taskID string, call *llm.ToolCall) (string, schemas.ToolCallRecord, bool) {
	err := c.guard.Tool(ctx, call)
	if err == nil {
		return "", schemas.ToolCallRecord{}, true
	}
	rec := schemas.ToolCallRecord{Agent: call.Name, Arguments: call.Arguments, TaskID: taskID}
	var held *llm.ApprovalError
	if errors.As(err, &held) {
		key := heldKey(*call)
		if slices.Contains(s.turn.Approved, key) {
			return "", schemas.ToolCallRecord{}, true
		}
		s.mu.Lock()
		s.held = key
		s.mu.Unlock()
		rec.Code = schemas.CodeApprovalRequired
		rec.Error = fmt.Sprintf("%s: policy %s holds the call of %s with %s until you approve it; answer yes to approve", schemas.CodeApprovalRequired, held.Policy, call.Name, call.Arguments)
		return fmt.Sprintf("%s was not called: it needs the user's approval, which was asked for; call it again with the same arguments once the user approves", call.Name), rec, false
	}
	rec.Code, rec.Error = schemas.CodeRefused, err.Error()
	return err.Error(), rec, false
}

// heldKey names an agent call a policy held: its agent and arguments.
func heldKey(call llm.ToolCall) string { return call.Name + " " + call.Arguments }

// approvedBy is the agent call the user approves with message, when the
// asked turn a asked for a held call's approval; nil otherwise.
func approvedBy(a *askedTurn, message string) []string {
	if a.Held == "" {
		return nil
	}
	switch strings.ToLower(strings.Trim(strings.TrimSpace(message), ".!")) {
	case "yes", "y", "ok", "okay", "approve", "approved", "yes, approve":
		return []string{a.Held}
	}
	return nil
}
