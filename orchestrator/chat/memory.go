package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/internal/memory"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
)

// RememberTool is the tool the model calls to remember a fact about the
// user across conversations: the fact is stored under the conversation
// owner's identity and recalled into that identity's later turns. It is
// offered only with WithMemory and in conversations that have an owner
// (a client identity); an agent named so hides it.
const RememberTool = "remember"

// Defaults of the recall: how many facts, and how many characters of them,
// go into a turn's prompt.
const (
	DefaultRecallFacts = 5
	DefaultRecallChars = 2000
)

// WithMemory remembers facts across conversations in m: the model gets the
// remember tool, the slots named are stored as facts when a turn
// completes, and each turn's prompt recalls the owner's facts that match
// its message (at most DefaultRecallFacts, DefaultRecallChars).
func WithMemory(m *memory.Store, slots ...string) Option {
	return func(ch *Chat) { ch.memory, ch.rememberSlots = m, slots }
}

// rememberTool is the function tool offered next to the agents.
func rememberTool() llm.Tool {
	return llm.Tool{
		Name: RememberTool,
		Description: "Remember one fact about the user for later conversations (a preference, a name, a standing instruction). " +
			"Facts remembered before are shown to you under \"Memory\" when they matter.",
		Parameters: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"fact":{"type":"string","maxLength":%d,"description":"the fact, in one short sentence"}},"required":["fact"]}`, memory.MaxFactRunes)),
	}
}

// remembers reports whether the turn of s offers the remember tool.
func (c *Chat) remembers(s *session) bool {
	if c.memory == nil || s.rec.Owner == "" {
		return false
	}
	_, agent := c.lookup(RememberTool)
	return !agent
}

// withRemember adds the remember tool to tools when s offers it.
func (c *Chat) withRemember(s *session, tools []llm.Tool) []llm.Tool {
	if c.remembers(s) && !slices.ContainsFunc(tools, func(t llm.Tool) bool { return t.Name == RememberTool }) {
		tools = append(tools, rememberTool())
	}
	return tools
}

// remember runs a remember call: the observation says what was stored, or
// why not.
func (c *Chat) remember(ctx context.Context, s *session, taskID string, call llm.ToolCall) (string, schemas.ToolCallRecord) {
	start := time.Now()
	rec := schemas.ToolCallRecord{Agent: RememberTool, Arguments: call.Arguments, TaskID: taskID}
	var args struct {
		Fact string `json:"fact"`
	}
	err := json.Unmarshal([]byte(call.Arguments), &args)
	if err != nil {
		err = fmt.Errorf("%w: the arguments %s are not a JSON object with a \"fact\" string: %v", memory.ErrInvalidFact, schemas.Clip(call.Arguments, 80), err)
	} else {
		_, err = c.memory.Remember(ctx, memory.Fact{Identity: s.rec.Owner, Text: args.Fact, Source: RememberTool, ConversationID: s.conv})
	}
	rec.DurationMS = time.Since(start).Milliseconds()
	if err != nil {
		rec.Code = schemas.CodeInvalidParams
		if !errors.Is(err, memory.ErrInvalidFact) && !errors.Is(err, memory.ErrFull) {
			rec.Code = schemas.CodeOf(err)
		}
		rec.Error = err.Error()
		return "Nothing was remembered: " + err.Error(), rec
	}
	rec.Success, rec.Summary = true, "remembered: "+schemas.Clip(args.Fact, 80)
	return "Remembered.", rec
}

// recall is the system message of the owner's facts that match the turn's
// message, or none.
func (c *Chat) recall(ctx context.Context, s *session) []llm.Message {
	if c.memory == nil || s.rec.Owner == "" {
		return []llm.Message{}
	}
	facts, err := c.memory.Recall(ctx, s.rec.Owner, s.turn.Message, DefaultRecallFacts, DefaultRecallChars)
	if err != nil {
		c.log.WarnContext(ctx, "chat: recalling memory", "err", err) // the turn goes on without it
	}
	if len(facts) == 0 {
		return []llm.Message{}
	}
	var b strings.Builder
	b.WriteString("Memory: facts remembered from this user's earlier conversations, the ones that match this message. Use them when they help; do not repeat them unasked.")
	for _, f := range facts {
		b.WriteString("\n- ")
		b.WriteString(f.Text)
	}
	return []llm.Message{{Role: llm.RoleSystem, Content: b.String()}}
}

// rememberSlotsOf stores the slots the operator named, as they are at the
// end of a completed turn, as facts of the owner ("<slot>: <text>"); a
// slot's newer value replaces its older one. Failures are only logged.
func (c *Chat) rememberSlotsOf(ctx context.Context, s *session) {
	if c.memory == nil || s.rec.Owner == "" || len(c.rememberSlots) == 0 {
		return
	}
	st, err := c.state(ctx, s.conv)
	if err != nil {
		c.log.WarnContext(ctx, "chat: reading the slots to remember", "err", err)
		return
	}
	for _, name := range c.rememberSlots {
		v, ok := st.Slots[name]
		if !ok {
			continue
		}
		text, err := v.Text()
		if err != nil || strings.TrimSpace(text) == "" {
			continue
		}
		f := memory.Fact{ID: memory.FactID("slot:" + name), Identity: s.rec.Owner, Source: "slot:" + name,
			Text: schemas.Clip(name+": "+strings.TrimSpace(text), memory.MaxFactRunes), ConversationID: s.conv}
		if _, err := c.memory.Remember(ctx, f); err != nil {
			c.log.WarnContext(ctx, "chat: remembering a slot", "slot", name, "err", err)
		}
	}
}
