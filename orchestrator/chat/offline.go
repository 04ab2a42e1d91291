package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
)

// runOffline answers with the offline planner: plan once (the plan is kept
// in the turn), then call the plan's agents in order through the same path
// as the LLM's tool calls.
func (c *Chat) runOffline(ctx context.Context, s *session) (schemas.ChatResponse, error) {
	t := s.turn
	if t.Plan == nil {
		st, err := c.state(ctx, s.conv)
		if err != nil {
			return schemas.ChatResponse{}, err
		}
		plan, err := PlanOffline(t.Message, c.contracts(), st.Slots, c.router)
		if err != nil {
			return c.finish(ctx, s, schemas.ChatFailed, "The offline planner answered (no LLM is configured): "+err.Error(), err)
		}
		t.Plan = plan.Steps
		c.progress(ctx, s.conv, "", "", "offline plan: "+strings.Join(plan.Agents(), " -> "))
		if err := c.save(ctx, s); err != nil {
			return schemas.ChatResponse{}, err
		}
	}
	for i := len(t.ToolCalls); i < len(t.Plan); i++ {
		if t.Steps >= c.maxSteps {
			return c.finish(ctx, s, schemas.ChatStepLimitReached, c.offlineOutput(t, "stopped at the step limit"), nil)
		}
		step := t.Plan[i]
		args, _ := json.Marshal(step.Params) // plain JSON values
		call := llm.ToolCall{ID: fmt.Sprintf("plan_%d", i), Name: step.Agent, Arguments: string(args)}
		t.Steps++
		t.Messages = append(t.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}})
		if err := c.runCalls(ctx, s, []llm.ToolCall{call}); err != nil {
			return schemas.ChatResponse{}, err
		}
		last := t.ToolCalls[len(t.ToolCalls)-1]
		if !last.Success {
			return c.finish(ctx, s, schemas.ChatFailed, c.offlineOutput(t, "stopped because "+last.Agent+" failed: "+last.Error), toolFailure(last))
		}
		if rest := t.Plan[i+1:]; len(rest) > 0 && slices.Contains(t.Empty, last.TaskID) {
			skipped := make([]string, len(rest))
			for j, st := range rest {
				skipped[j] = st.Agent
			}
			return c.finish(ctx, s, schemas.ChatCompleted, c.offlineOutput(t,
				"stopped because "+last.Agent+" found nothing, so "+strings.Join(skipped, " -> ")+" had nothing to work on and did not run"), nil)
		}
	}
	return c.finish(ctx, s, schemas.ChatCompleted, c.offlineOutput(t, "")+c.offlineText(ctx, s), nil)
}

// offlineText shows the text the plan's last step wrote ("dlrow olleh"
// for "reverse the text hello world"): with no model to put the result
// in words, the answer carries it. "" when the last step wrote none.
func (c *Chat) offlineText(ctx context.Context, s *session) string {
	t := s.turn
	if len(t.ToolCalls) == 0 {
		return ""
	}
	last := t.ToolCalls[len(t.ToolCalls)-1]
	slot, ok := c.router.SlotFor(schemas.TypeText, "")
	if !ok {
		return ""
	}
	st, err := c.state(ctx, s.conv)
	if err != nil {
		return ""
	}
	v, ok := st.Slots[slot]
	var text string
	if !ok || v.Source != last.Agent || v.Decode(&text) != nil || strings.TrimSpace(text) == "" {
		return ""
	}
	return fmt.Sprintf(" %s wrote: %s", last.Agent, schemas.Clip(strings.TrimSpace(text), 600))
}

func (c *Chat) offlineOutput(t *chatTurn, ending string) string {
	var b strings.Builder
	b.WriteString("The offline planner answered (no LLM is configured): ran ")
	for i, r := range t.ToolCalls {
		if i > 0 {
			b.WriteString(" -> ")
		}
		b.WriteString(r.Agent)
	}
	b.WriteString(".")
	for i, r := range t.ToolCalls {
		obs := ""
		for _, m := range t.Messages {
			if m.Role == llm.RoleTool && m.ToolCallID == fmt.Sprintf("plan_%d", i) {
				obs = m.Content
			}
		}
		if r.Success {
			fmt.Fprintf(&b, " %s", firstLine(obs))
		}
	}
	if ending != "" {
		fmt.Fprintf(&b, " It %s.", ending)
	}
	return b.String()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if s != "" && !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
