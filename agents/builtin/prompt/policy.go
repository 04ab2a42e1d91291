package prompt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/agents/builtin/llmiface"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
)

// WithGuard puts the agent's model calls and tool calls through g's
// policies (llm.Guard), in place of those of the config's policy block: a
// refused model call ends the task policy_refused with the reason; a
// refused tool call is answered to the model with the reason; a tool call
// held for approval ends the task approval_required, so a pipeline step
// waits for a person (agentmesh approve) and is sent again with the param
// approved: true, which lets the held calls run.
func WithGuard(g *llm.Guard) Option {
	return func(a *Agent) { a.guard = g }
}

// guarded is model with the agent's guard around it; without a guard,
// model itself.
func (a *Agent) guarded(model ToolModel) ToolModel {
	if a.guard.Policies() == 0 {
		return model
	}
	m, ok := model.(llm.Model)
	if !ok {
		m = chatOnly{model}
	}
	return a.guard.Model(m)
}

// chatOnly is a model that does not stream, as an llm.Model.
type chatOnly struct{ ToolModel }

func (m chatOnly) Stream(ctx context.Context, req llm.Request, _ func(llm.Delta)) (llm.Response, llm.Usage, error) {
	return m.Chat(ctx, req)
}

// textOnly is a text model as a ToolModel: the request's system message
// and its user message go to Complete, a longer conversation (a retry
// after a refused answer) as one user message holding each turn; it takes
// neither tools nor output schemas.
type textOnly struct{ llmiface.TextModel }

func (m textOnly) Chat(ctx context.Context, req llm.Request) (llm.Response, llm.Usage, error) {
	var system string
	var turns []llm.Message
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleSystem {
			system = msg.Content
			continue
		}
		turns = append(turns, msg)
	}
	user := ""
	if len(turns) == 1 {
		user = turns[0].Content
	} else {
		var b strings.Builder
		for _, t := range turns {
			fmt.Fprintf(&b, "## %s\n%s\n\n", t.Role, t.Content)
		}
		user = strings.TrimSpace(b.String())
	}
	text, usage, err := m.Complete(ctx, system, user)
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: text}},
		llm.Usage{Tokens: usage.Tokens, Cost: usage.Cost, Attempts: 1, Duration: time.Duration(usage.ModelMS) * time.Millisecond}, err
}

// policyFailure is the outcome of a task a policy stopped, or ok false
// when err is no policy's.
func (a *Agent) policyFailure(err error) (schemas.AgentResult, bool) {
	var held *llm.ApprovalError
	if errors.As(err, &held) {
		return schemas.Failure(a.cfg.Name, schemas.CodeApprovalRequired, held.Error()+"; approve the step, or send the task again with the param approved: true", false), true
	}
	if errors.Is(err, llm.ErrRefused) {
		return schemas.Failure(a.cfg.Name, schemas.CodeRefused, err.Error(), false), true
	}
	return schemas.AgentResult{}, false
}

// approvedKey marks the context of a task whose params say approved: true.
type approvedKey struct{}

// withApproval marks ctx when the task's params say approved: true.
func withApproval(ctx context.Context, ec *schemas.ExecutionContext) context.Context {
	if approved, _ := ec.Params()["approved"].(bool); approved {
		return context.WithValue(ctx, approvedKey{}, true)
	}
	return ctx
}

// checkTool asks the guard about a tool call: "" to call it, else what the
// model reads instead. A call held for approval runs when the task's
// params say approved: true, else it ends the task (errHeld).
func (a *Agent) checkTool(ctx context.Context, call *llm.ToolCall) (string, error) {
	err := a.guard.Tool(ctx, call)
	var held *llm.ApprovalError
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &held):
		if approved, _ := ctx.Value(approvedKey{}).(bool); approved {
			return "", nil
		}
		return "", err
	default:
		return fmt.Sprintf("error: %v", err), nil
	}
}
