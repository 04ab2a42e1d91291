package chat

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
)

// AskUserTool is the tool the model calls to ask the user a question: the
// turn ends in state input_required (A2A's input-required) with the
// question, and the conversation's next message is the tool's result, so
// the model carries on where it stopped. An agent named so hides it.
const AskUserTool = "ask_user"

// askedTurn is a turn that ended input_required, kept in the chat record
// until the conversation's next message continues it.
type askedTurn struct {
	RequestID string   `json:"request_id"`
	Messages  messages `json:"messages"`          // the turn's, up to the question
	CallID    string   `json:"call_id,omitempty"` // the ask_user call the answer goes to; "" when an agent asked
	Question  string   `json:"question"`
	AskedBy   string   `json:"asked_by,omitempty"`
	Held      string   `json:"held,omitempty"` // the agent call (heldKey) a policy held: a yes approves it
}

// askUserTool is the function tool offered next to the agents.
func askUserTool() llm.Tool {
	return llm.Tool{
		Name: AskUserTool,
		Description: "Ask the user a question when you cannot go on without their answer (a missing detail, a choice, a confirmation). " +
			"The turn pauses; the user's next message is this tool's result.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"question":{"type":"string","description":"the question, in one or two sentences"}},"required":["question"]}`),
	}
}

// tools are the tools of a model call: one per agent, and ask_user.
func (c *Chat) tools(contracts []schemas.AgentContract) []llm.Tool {
	tools := Tools(contracts, c.router)
	if !slices.ContainsFunc(contracts, func(a schemas.AgentContract) bool { return a.Name == AskUserTool }) {
		tools = append(tools, askUserTool())
	}
	return tools
}

// askCall splits the model's pending calls into its ask_user call (nil
// when none) and the agent calls.
func (c *Chat) askCall(calls []llm.ToolCall) (*llm.ToolCall, []llm.ToolCall) {
	if _, agent := c.lookup(AskUserTool); agent {
		return nil, calls
	}
	var ask *llm.ToolCall
	var rest []llm.ToolCall
	for i := range calls {
		if calls[i].Name == AskUserTool && ask == nil {
			ask = &calls[i]
			continue
		}
		rest = append(rest, calls[i])
	}
	return ask, rest
}

// question is the question of an ask_user call: its question argument, or
// its raw arguments when they do not decode.
func question(call llm.ToolCall) string {
	var args struct {
		Question string `json:"question"`
	}
	if json.Unmarshal([]byte(call.Arguments), &args) == nil && strings.TrimSpace(args.Question) != "" {
		return strings.TrimSpace(args.Question)
	}
	if q := strings.TrimSpace(call.Arguments); q != "" && q != "{}" {
		return q
	}
	return "Could you tell me more?"
}

// agentAsked returns the last of recs whose agent asked for input or
// approval (codes input_required, approval_required), and its question.
func agentAsked(recs []schemas.ToolCallRecord) (schemas.ToolCallRecord, string, bool) {
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.Code == schemas.CodeInputRequired || r.Code == schemas.CodeApprovalRequired {
			msg := strings.TrimPrefix(r.Error, r.Code+": ")
			return r, r.Agent + " asks: " + msg, true
		}
	}
	return schemas.ToolCallRecord{}, "", false
}

// ask ends the turn input_required with question: the turn is kept in the
// chat record, to be continued by the next message (continueAsked).
func (c *Chat) ask(ctx context.Context, s *session, callID, question, askedBy string) (schemas.ChatResponse, error) {
	t := s.turn
	s.rec.Asked = &askedTurn{RequestID: t.RequestID, Messages: slices.Clone(t.Messages), CallID: callID, Question: question, AskedBy: askedBy, Held: s.held}
	s.held = ""
	who := "the model"
	if askedBy != "" {
		who = askedBy
	}
	c.progress(ctx, s.conv, "", askedBy, who+" asks the user")
	return c.finish(ctx, s, schemas.ChatInputRequired, question, nil)
}

// continueAsked is the first messages of a turn that answers an asked
// turn with message: the asked turn's messages, then the answer, as the
// ask_user call's result or, when an agent asked, as the user's message.
func continueAsked(a *askedTurn, message string) []llm.Message {
	msgs := slices.Clone(a.Messages)
	if a.CallID != "" {
		return append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: a.CallID, Name: AskUserTool,
			Content: "The user answered: " + message})
	}
	return append(msgs, llm.Message{Role: llm.RoleUser, Content: message})
}
