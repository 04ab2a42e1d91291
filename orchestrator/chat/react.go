package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// runLLM is the ReAct loop: think, call the chosen agents, observe, repeat.
func (c *Chat) runLLM(ctx context.Context, s *session) (schemas.ChatResponse, error) {
	t := s.turn
	for {
		if calls := pendingCalls(t.Messages); len(calls) > 0 {
			ask, calls := c.askCall(calls)
			if len(calls) > 0 {
				done := len(t.ToolCalls)
				if err := c.runCalls(ctx, s, calls); err != nil {
					return schemas.ChatResponse{}, err
				}
				if rec, ok := c.budgetRefused(t.ToolCalls[done:]); ok {
					return c.finish(ctx, s, schemas.ChatFailed, "The turn stopped: "+rec.Error, schemas.WithCode(schemas.CodeBudgetExceeded,
						fmt.Errorf("%s (task %s): %s", rec.Agent, rec.TaskID, rec.Error)))
				}
				if rec, q, ok := agentAsked(t.ToolCalls[done:]); ok && ask == nil {
					return c.ask(ctx, s, "", q, rec.Agent)
				}
				continue
			}
			if ask != nil {
				return c.ask(ctx, s, ask.ID, question(*ask), "")
			}
		}
		if last := t.Messages[len(t.Messages)-1]; last.Role == llm.RoleAssistant {
			out := strings.TrimSpace(last.Content)
			if out == "" {
				out = "(the model ended the turn without an answer)"
			}
			return c.finish(ctx, s, schemas.ChatCompleted, out, nil)
		}
		if t.Steps >= c.maxSteps {
			return c.finish(ctx, s, schemas.ChatStepLimitReached,
				fmt.Sprintf("I stopped after %d steps without a final answer (the step limit). %s", t.Steps, c.lastResults(t)), nil)
		}
		st, err := c.state(ctx, s.conv)
		if err != nil {
			return schemas.ChatResponse{}, err
		}
		if s.history == nil {
			if s.history, err = c.history(ctx, s); err != nil {
				return schemas.ChatResponse{}, err
			}
		}
		contracts := c.contracts()
		if s.recalled == nil {
			s.recalled = c.recall(ctx, s)
		}
		req := llm.Request{Messages: c.prompt(s, st), Tools: c.withRemember(s, c.tools(contracts))}
		// Stored (and acknowledged) before the call's first piece is sent.
		c.note(ctx, s.conv, schemas.TaskProgress{Message: "thinking", Step: t.Steps + 1})
		resp, usage, err := c.llm.Stream(c.withBudgets(ctx, s.conv, t), req, c.deltas(s))
		c.observer.Observe(ctx, schemas.LLMCalled{ConversationID: s.conv, Model: usage.Model, Tokens: usage.Tokens,
			Cost: usage.Cost, Duration: usage.Duration, Err: err})
		t.Steps++
		t.Usage = t.Usage.Add(usage.Report())
		if err != nil {
			if ctx.Err() != nil {
				return schemas.ChatResponse{}, ctx.Err()
			}
			if errors.Is(err, llm.ErrRefused) {
				return c.finish(ctx, s, schemas.ChatFailed, "A policy stopped the model call: "+err.Error(), schemas.WithCode(schemas.CodeRefused, err))
			}
			if errors.Is(err, llm.ErrBudgetExceeded) {
				return c.finish(ctx, s, schemas.ChatFailed, "The turn stopped: "+err.Error(), err)
			}
			return c.finish(ctx, s, schemas.ChatFailed, "The language model could not be reached: "+err.Error(), err)
		}
		msg := resp.Message
		msg.Role = llm.RoleAssistant
		for i := range msg.ToolCalls {
			if msg.ToolCalls[i].ID == "" {
				msg.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", t.Steps, i)
			}
		}
		t.Messages = append(t.Messages, msg)
		if err := c.save(ctx, s); err != nil {
			return schemas.ChatResponse{}, err
		}
	}
}

// pendingCalls returns the tool calls of the last assistant message that
// have no tool message yet.
func pendingCalls(msgs []llm.Message) []llm.ToolCall {
	i := len(msgs) - 1
	answered := map[string]bool{}
	for ; i >= 0 && msgs[i].Role == llm.RoleTool; i-- {
		answered[msgs[i].ToolCallID] = true
	}
	if i < 0 || msgs[i].Role != llm.RoleAssistant {
		return nil
	}
	var out []llm.ToolCall
	for _, tc := range msgs[i].ToolCalls {
		if !answered[tc.ID] {
			out = append(out, tc)
		}
	}
	return out
}

// runCalls dispatches calls in parallel, appends their observations in the
// order of the calls and saves the turn.
func (c *Chat) runCalls(ctx context.Context, s *session, calls []llm.ToolCall) error {
	t := s.turn
	obs := make([]string, len(calls))
	recs := make([]schemas.ToolCallRecord, len(calls))
	var wg sync.WaitGroup
	ctx = c.withTaskBudget(ctx, s)
	before, read := c.turnSpent(ctx, s)
	for i, call := range calls {
		taskID := schemas.TaskTag(fmt.Sprintf("%s-t%d-%s", s.conv, t.Number, taskToken(call.ID)), s.rec.Nonce)
		wg.Go(func() { obs[i], recs[i] = c.callTool(ctx, s, taskID, call) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for i, call := range calls {
		t.Messages = append(t.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: obs[i]})
		t.ToolCalls = append(t.ToolCalls, recs[i])
		t.Usage = t.Usage.Add(recs[i].Usage) // saved with the call, so counted once
	}
	if err := c.save(ctx, s); err != nil {
		return err
	}
	c.chargeCalls(ctx, s, recs, before, read)
	return nil
}

// taskToken makes a model's tool call id usable in a task id.
func taskToken(id string) string {
	var b strings.Builder
	for _, r := range id {
		if r < 128 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "call"
	}
	return b.String()
}

// callAgent runs one agent call: arguments, inputs from state, dispatch,
// await, routing. Every failure becomes the observation the model reads.
//
// It is long because it is one tool call from end to end (look up, build
// inputs, dispatch, await, route, report), and every step may end it with
// its own observation for the model.
func (c *Chat) callAgent(ctx context.Context, s *session, taskID, agent, rawArgs string) (string, schemas.ToolCallRecord) {
	start := time.Now()
	rec := schemas.ToolCallRecord{Agent: agent, Arguments: rawArgs, TaskID: taskID}
	fail := func(msg string) (string, schemas.ToolCallRecord) {
		rec.Error = msg
		rec.DurationMS = time.Since(start).Milliseconds()
		return msg, rec
	}
	info, ok := c.lookup(agent)
	if !ok {
		rec.Code = schemas.CodeUnknownAgent
		names := make([]string, 0)
		for _, a := range c.registry.Agents() {
			names = append(names, a.Contract.Name)
		}
		return fail(fmt.Sprintf("unknown agent %q: no live agent has that name. Live agents: %s.", agent, strings.Join(names, ", ")))
	}
	contract := info.Contract
	st, err := c.state(ctx, s.conv)
	if err != nil {
		return fail(fmt.Sprintf("%s was not called: reading the conversation state failed: %v", agent, err))
	}
	args, err := ParseToolArgs(contract, rawArgs, st.Slots, c.router.DataTypes())
	if err != nil {
		return fail(fmt.Sprintf("%s was not called: %v", agent, err))
	}
	inputs, err := c.buildInputs(contract, args, st.Slots)
	if err != nil {
		return fail(fmt.Sprintf("%s was not called: %v", agent, err))
	}
	timeout := c.toolTimeout
	if contract.TimeoutMS > 0 {
		timeout = time.Duration(contract.TimeoutMS) * time.Millisecond
	}
	budget, budgetKey := taskBudget(ctx) // the turn's, in its ledger, shared with the calls running beside this one
	task := schemas.TaskRequest{Inputs: inputs, Params: args.Params, Instruction: s.turn.Message, TimeoutMS: timeout.Milliseconds(), Budget: budget, BudgetKey: budgetKey}
	meta := meshcore.DispatchMeta{TaskID: taskID, ConversationID: s.conv, ReplyTo: c.names.Result(agent, taskID), Deadline: time.Now().Add(timeout), Owner: s.rec.Owner}
	c.progress(ctx, s.conv, taskID, agent, "calling "+agent)
	if _, err := c.dispatch.Dispatch(ctx, agent, task, meta); err != nil {
		if errors.Is(err, bus.ErrBacklogFull) {
			// The agent's backlog is at its limit: the call was not made,
			// and the model hears so at once rather than after a timeout.
			rec.Code = schemas.CodeBacklogFull
			c.progress(ctx, s.conv, taskID, agent, agent+" was not called: its backlog is full")
			return fail(fmt.Sprintf("%s was not called (%s): %v. Try again later, try another agent, or tell the user.", agent, schemas.CodeBacklogFull, err))
		}
		return fail(fmt.Sprintf("%s could not be called: %v", agent, err))
	}
	actx, cancel := context.WithTimeout(ctx, timeout+awaitGrace)
	stop := c.dispatch.KeepDispatched(actx, agent, task, meta)
	res, err := c.dispatch.Await(actx, meta.ReplyTo, taskID)
	stop()
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return fail(ctx.Err().Error())
		}
		if bad, ok := errors.AsType[*meshcore.UndecodableResultError](err); ok {
			return fail(c.undecodable(ctx, s.conv, agent, bad))
		}
		if errors.Is(err, context.DeadlineExceeded) {
			rec.Code = schemas.CodeTimeout
			c.progress(ctx, s.conv, taskID, agent, agent+" timed out")
			return fail(fmt.Sprintf("%s did not answer within %s (timeout). Try again, try another agent, or tell the user.", agent, timeout))
		}
		return fail(fmt.Sprintf("%s: waiting for the result failed: %v", agent, err))
	}
	result := res.Result
	if result.Agent == "" {
		result.Agent = agent
	}
	rec.Usage = result.Metrics.Usage()
	var entry *schemas.HistoryEntry
	if _, err := c.store.UpdateConversation(ctx, s.conv, func(st *schemas.ConversationState) error {
		entry = nil
		kept := len(st.History) // a conversation of the previous layout has some
		changed, err := c.router.Apply(ctx, st, contract, taskID, result)
		if err == nil && !changed {
			return state.ErrUnchanged
		}
		if len(st.History) > kept {
			// The routing's history entry belongs to the turn (see
			// storedTurn), not to the conversation's state.
			e := st.History[len(st.History)-1]
			entry, st.History = &e, st.History[:kept]
		}
		return err
	}); err != nil {
		return fail(fmt.Sprintf("%s answered, but its outputs could not be stored: %v", agent, err))
	}
	if entry != nil {
		s.mu.Lock()
		s.turn.Results = append(s.turn.Results, *entry)
		s.mu.Unlock()
	}
	c.progress(ctx, s.conv, taskID, agent, ProgressLine(agent, result, c.router.DataTypes()))
	rec.Success = result.Success
	rec.Summary = result.Summary
	if result.Success && emptyOutputs(result, c.router.DataTypes()) {
		s.turn.Empty = append(s.turn.Empty, taskID)
	}
	rec.DurationMS = time.Since(start).Milliseconds()
	if !result.Success {
		rec.Error, rec.Code = result.Err().Error(), schemas.CodeOf(result.Err())
	}
	return Observation(agent, result, c.router), rec
}

// undecodable puts a result that could not be decoded on mesh.dead.<agent>
// and returns what the model reads about it.
func (c *Chat) undecodable(ctx context.Context, conv, agent string, bad *meshcore.UndecodableResultError) string {
	kept := "it was not kept"
	if err := c.dispatch.DeadLetter(ctx, agent, bad.Msg, bad.Error()); err != nil {
		c.log.WarnContext(ctx, "chat: dead-lettering an undecodable result", "task", bad.TaskID, "err", err)
	} else if subject, err := c.names.Dead(agent); err == nil {
		kept = "it is kept on " + subject
	}
	c.progress(ctx, conv, bad.TaskID, agent, agent+" answered with a result that could not be decoded")
	return fmt.Sprintf("%s answered, but its result could not be decoded (%s: %v); %s. Try again, try another agent, or tell the user.",
		agent, schemas.CodeMalformedResult, bad.Err, kept)
}

// emptyOutputs reports a result with outputs that all hold nothing (0
// images, an empty text).
func emptyOutputs(res schemas.AgentResult, reg *schemas.DataTypeRegistry) bool {
	if len(res.Outputs) == 0 {
		return false
	}
	for _, v := range res.Outputs {
		if reg.Count(v) > 0 {
			if t, err := v.Text(); err != nil || strings.TrimSpace(t) != "" {
				return false
			}
		}
	}
	return true
}

// buildInputs fills the contract's inputs from state, with the literal
// values and the slots the arguments gave taking precedence.
func (c *Chat) buildInputs(contract schemas.AgentContract, args ToolArgs, slots map[string]schemas.TypedValue) (map[string]schemas.TypedValue, error) {
	rest := contract
	rest.Inputs = slices.DeleteFunc(slices.Clone(contract.Inputs), func(in schemas.TypedInput) bool {
		_, referenced := args.Refs[in.Name]
		_, given := args.Literals[in.Name]
		return referenced || given
	})
	inputs, err := c.inputs.Build(rest, slots)
	if err != nil {
		return nil, err
	}
	for in, slot := range args.Refs {
		inputs[in] = slots[slot]
	}
	for in, v := range args.Literals {
		inputs[in] = v
	}
	return inputs, nil
}

func (c *Chat) lookup(name string) (meshcore.AgentInfo, bool) {
	for _, a := range c.registry.Agents() {
		if a.Contract.Name == name {
			return a, true
		}
	}
	return meshcore.AgentInfo{}, false
}

func (c *Chat) contracts() []schemas.AgentContract {
	agents := c.registry.Agents()
	out := make([]schemas.AgentContract, 0, len(agents))
	for _, a := range agents {
		out = append(out, a.Contract)
	}
	return out
}

func (c *Chat) state(ctx context.Context, conv string) (*schemas.ConversationState, error) {
	st, err := c.store.ConversationState(ctx, conv)
	if errors.Is(err, state.ErrNotFound) {
		return schemas.NewConversationState(conv), nil
	}
	return st, err
}

// prompt is what the model reads: the system prompt, the state as Data,
// the earlier turns that fit the history budget, then this turn.
func (c *Chat) prompt(s *session, st *schemas.ConversationState) []llm.Message {
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: c.system}}
	msgs = append(msgs, s.recalled...)
	msgs = append(msgs, RenderData([]Data{StateData(st, c.router.DataTypes())})...)
	msgs = append(msgs, s.history...)
	return append(msgs, s.turn.Messages...)
}

// history is what the model is shown of the turns before s's: the newest
// whole turns that fit the history budget, read from their keys newest
// first until the budget is spent, so a turn's prompt costs the same
// however long the conversation is.
func (c *Chat) history(ctx context.Context, s *session) ([]llm.Message, error) {
	var (
		turns [][]llm.Message // newest first
		used  int
	)
	for n := s.turn.Number - 1; n >= 0 && used <= c.budget; n-- {
		raw, err := c.store.Turn(ctx, s.conv, n)
		if errors.Is(err, state.ErrNotFound) {
			continue // a turn that asked (its next one carries it on), or none
		}
		if err != nil {
			return nil, err
		}
		var t storedTurn
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("%w: turn %d of conversation %q: %w", state.ErrCorrupt, n, s.conv, err)
		}
		if len(t.Messages) == 0 {
			continue
		}
		turns = append(turns, t.Messages)
		for _, m := range t.Messages {
			used += EstimateTokens(m)
		}
	}
	slices.Reverse(turns)
	out := PruneHistory(turns, c.budget)
	if out == nil {
		out = []llm.Message{}
	}
	return out, nil
}

// PruneHistory returns the newest whole turns whose estimated tokens fit
// budget, oldest first. Turns are kept or dropped whole, so a tool message
// never loses the assistant message that called it.
func PruneHistory(turns [][]llm.Message, budget int) []llm.Message {
	used, first := 0, len(turns)
	for i := len(turns) - 1; i >= 0; i-- {
		n := 0
		for _, m := range turns[i] {
			n += EstimateTokens(m)
		}
		if used+n > budget {
			break
		}
		used += n
		first = i
	}
	var out []llm.Message
	for _, t := range turns[first:] {
		out = append(out, t...)
	}
	return out
}

// EstimateTokens guesses a message's size in tokens (4 characters a token,
// plus a little per message).
func EstimateTokens(m llm.Message) int { return llm.EstimateTokens(m) }

// lastResults describes the latest tool results of the turn in one line.
func (c *Chat) lastResults(t *chatTurn) string {
	if len(t.ToolCalls) == 0 {
		return "No agent was called."
	}
	var parts []string
	for _, r := range t.ToolCalls[max(0, len(t.ToolCalls)-3):] {
		if r.Success {
			parts = append(parts, fmt.Sprintf("%s: %s", r.Agent, schemas.Clip(r.Summary, 120)))
		} else {
			parts = append(parts, fmt.Sprintf("%s failed", r.Agent))
		}
	}
	return "Last results: " + strings.Join(parts, "; ") + "."
}
