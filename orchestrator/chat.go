package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	openai "github.com/sashabaranov/go-openai"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
)

// TypeChatProgress is the type of the progress events of a chat turn
// ("thinking", "calling ImageSearch", "ImageSearch returned 12 images"),
// published on mesh.events.<conversation>.chat next to the final
// io.agentmesh.chat.responded. Their data has the shape of
// io.agentmesh.task.progress: {taskid, agent, message}.
const TypeChatProgress = "io.agentmesh.chat.progress"

// Planner names in ChatResponse.Planner.
const (
	PlannerLLM     = "llm"
	PlannerOffline = "offline"
)

// Defaults of the chat loop.
const (
	DefaultMaxSteps      = 10
	DefaultHistoryBudget = 6000 // tokens of earlier turns shown to the model
	maxRememberedTurns   = 50
	maxDoneTurns         = 20
	awaitGrace           = 2 * time.Second
	staleTurn            = 3 * time.Minute // a turn not saved for this long was lost
)

// DefaultSystemPrompt tells the model how the mesh works.
const DefaultSystemPrompt = `You are the orchestrator of agentmesh, a mesh of independent agents. Fulfil the user's request by calling agents, which are your tools.
Each agent reads its inputs from the conversation state automatically (by data type) and its outputs are stored back into state slots; the current state is shown to you as ¶state. To use a particular slot as an input, pass "†state.<slot>" as the argument.
Call agents one after another when one needs another's output, or several at once when they are independent. If a call fails, read the observation and recover or explain.
When the request is done, answer in one or two plain sentences with counts. Never list file IDs.`

// AgentLister is the live view of agents the chat loop offers as tools
// (*Registry implements it).
type AgentLister interface {
	Agents() []AgentInfo
}

// Chat runs chat turns: the ReAct loop with an LLM over the live agents'
// contracts, or the offline planner when no LLM is configured. A turn's
// progress (messages so far, pending tool calls, the offline plan) is kept
// in the conversations bucket under <conversation>.chat, so a turn whose
// replica died is resumed by whichever replica gets the redelivered request.
// Tool calls have deterministic task ids, so a resumed call is not run twice.
//
// A Chat is safe for concurrent use; one per replica.
type Chat struct {
	js       jetstream.JetStream
	names    bus.Names
	kv       jetstream.KeyValue
	registry AgentLister
	store    *StateStore
	router   *Router
	inputs   *InputBuilder
	dispatch *Dispatcher

	llm         *llm.Client
	maxSteps    int
	toolTimeout time.Duration
	budget      int
	system      string
	source      string
	log         *slog.Logger
}

// ChatOption configures a Chat.
type ChatOption func(*Chat)

// WithLLM sets the model client; without it (or with nil) the offline
// planner answers.
func WithLLM(c *llm.Client) ChatOption { return func(ch *Chat) { ch.llm = c } }

// WithMaxSteps sets the step limit of a turn: model calls with the LLM,
// agent calls with the offline planner (default 10).
func WithMaxSteps(n int) ChatOption { return func(ch *Chat) { ch.maxSteps = n } }

// WithToolTimeout sets how long an agent call may take when its contract
// names no timeout (default DefaultTaskTimeout).
func WithToolTimeout(d time.Duration) ChatOption { return func(ch *Chat) { ch.toolTimeout = d } }

// WithHistoryBudget sets how many tokens (estimated) of earlier turns are
// shown to the model; older turns are pruned first (default 6000).
func WithHistoryBudget(tokens int) ChatOption { return func(ch *Chat) { ch.budget = tokens } }

// WithSystemPrompt replaces DefaultSystemPrompt.
func WithSystemPrompt(s string) ChatOption { return func(ch *Chat) { ch.system = s } }

// WithChatState shares a state store, router and dispatcher with the rest
// of the replica (nil values keep the Chat's own).
func WithChatState(store *StateStore, router *Router, dispatcher *Dispatcher) ChatOption {
	return func(ch *Chat) {
		if store != nil {
			ch.store = store
		}
		if router != nil {
			ch.router = router
		}
		if dispatcher != nil {
			ch.dispatch = dispatcher
		}
	}
}

// WithChatLogger sets the logger (default slog.Default()).
func WithChatLogger(l *slog.Logger) ChatOption { return func(ch *Chat) { ch.log = l } }

// NewChat returns a chat loop that publishes with js under names, keeps
// state in the conversations bucket and offers the agents of registry as
// tools. Options: WithLLM, WithMaxSteps, WithToolTimeout,
// WithHistoryBudget, WithSystemPrompt, WithChatState, WithChatLogger.
func NewChat(js jetstream.JetStream, names bus.Names, conversations jetstream.KeyValue, registry AgentLister, opts ...ChatOption) (*Chat, error) {
	if js == nil || conversations == nil || registry == nil {
		return nil, errors.New("orchestrator: NewChat needs a JetStream handle, the conversations bucket and a registry")
	}
	c := &Chat{
		js: js, names: names, kv: conversations, registry: registry,
		maxSteps: DefaultMaxSteps, toolTimeout: DefaultTaskTimeout, budget: DefaultHistoryBudget,
		system: DefaultSystemPrompt, source: "agentmesh/orchestrator/chat", log: slog.Default(),
	}
	for _, o := range opts {
		o(c)
	}
	if c.store == nil {
		c.store = NewStateStore(conversations, nil)
	}
	if c.router == nil {
		c.router = NewRouter()
	}
	if c.dispatch == nil {
		c.dispatch = NewDispatcher(js, names, c.source)
	}
	c.inputs = NewInputBuilder(c.router)
	if c.maxSteps <= 0 {
		c.maxSteps = DefaultMaxSteps
	}
	return c, nil
}

// Planner reports which planner answers: "llm" or "offline".
func (c *Chat) Planner() string {
	if c.llm != nil {
		return PlannerLLM
	}
	return PlannerOffline
}

// chatRecord is the chat memory of one conversation, stored as JSON under
// <conversation>.chat in the conversations bucket.
type chatRecord struct {
	Turns   [][]openai.ChatCompletionMessage `json:"turns,omitempty"` // finished turns, oldest first
	Current *chatTurn                        `json:"current,omitempty"`
	Done    []doneTurn                       `json:"done,omitempty"` // the last responses, by request
}

// chatTurn is the turn in progress.
type chatTurn struct {
	RequestID string                         `json:"request_id"`
	Message   string                         `json:"message"`
	Number    int                            `json:"number"`
	Messages  []openai.ChatCompletionMessage `json:"messages"`
	Steps     int                            `json:"steps"`
	ToolCalls []schemas.ToolCallRecord       `json:"tool_calls,omitempty"`
	Tokens    schemas.Tokens                 `json:"tokens"`
	Cost      float64                        `json:"cost"`
	Plan      []PlanStep                     `json:"plan,omitempty"` // offline planner only
	StartedAt time.Time                      `json:"started_at"`
	UpdatedAt time.Time                      `json:"updated_at"`
}

type doneTurn struct {
	RequestID string               `json:"request_id"`
	Response  schemas.ChatResponse `json:"response"`
}

// session is one turn being run, with the record's KV revision.
type session struct {
	conv string
	rec  chatRecord
	rev  uint64
	turn *chatTurn
}

// errTakenOver means another replica advanced the same turn further.
var errTakenOver = errors.New("chat turn taken over by another replica")

// HandleEvent runs the turn asked for by an io.agentmesh.chat.requested
// event to its end and publishes io.agentmesh.chat.responded. It is
// idempotent by event id: a redelivered request whose turn finished
// republishes the same response; one whose turn is in progress resumes it.
// A bad request is answered with a failed response, not an error; the
// error is for failures the caller should retry (KV or NATS trouble).
func (c *Chat) HandleEvent(ctx context.Context, ev bus.Event) (schemas.ChatResponse, error) {
	var req schemas.ChatRequest
	err := bus.DecodeData(ev, &req, func(b []byte) error { return schemas.ValidateJSON(schemas.SchemaChatRequest, b) })
	conv := req.ConversationID
	if conv == "" {
		conv = ev.ID
	}
	if err == nil {
		err = bus.ValidateToken("conversation id", conv)
	}
	if err == nil && strings.TrimSpace(req.Message) == "" {
		err = errors.New("message is empty: say what the mesh should do")
	}
	if err != nil {
		resp := schemas.ChatResponse{ConversationID: conv, State: schemas.ChatFailed, Planner: c.Planner(),
			Output: "The chat request could not be read: " + err.Error(), Error: err.Error()}
		if bus.ValidateToken("conversation id", conv) == nil {
			return resp, c.publish(ctx, conv, bus.TypeChatResponded, resp, "chat-"+ev.ID)
		}
		return resp, nil
	}
	return c.Handle(ctx, conv, ev.ID, req.Message)
}

// Handle runs one turn of conversation conv for the request requestID
// (the event id) with message, resuming it when it was started before.
func (c *Chat) Handle(ctx context.Context, conv, requestID, message string) (schemas.ChatResponse, error) {
	s, err := c.begin(ctx, conv, requestID, message)
	if err != nil {
		return schemas.ChatResponse{}, err
	}
	if s.turn == nil { // already answered
		for _, d := range s.rec.Done {
			if d.RequestID == requestID {
				return d.Response, c.publish(ctx, conv, bus.TypeChatResponded, d.Response, "chat-"+requestID)
			}
		}
	}
	var resp schemas.ChatResponse
	if c.llm != nil {
		resp, err = c.runLLM(ctx, s)
	} else {
		resp, err = c.runOffline(ctx, s)
	}
	if errors.Is(err, errTakenOver) {
		c.log.Info("chat turn taken over", "conversation", conv, "request", requestID)
		return resp, nil
	}
	if err != nil && ctx.Err() == nil {
		// The mesh itself failed (KV or stream trouble): say so rather than
		// leave the client waiting. A stopping replica says nothing; the
		// redelivered request resumes the turn elsewhere.
		resp = schemas.ChatResponse{ConversationID: conv, State: schemas.ChatFailed, Planner: c.Planner(),
			Steps: s.turn.Steps, ToolCalls: s.turn.ToolCalls, Tokens: s.turn.Tokens, Cost: s.turn.Cost,
			DurationMS: time.Since(s.turn.StartedAt).Milliseconds(),
			Output:     "The turn failed inside the mesh: " + err.Error(), Error: err.Error()}
		if perr := c.publish(ctx, conv, bus.TypeChatResponded, resp, "chat-"+requestID); perr != nil {
			err = errors.Join(err, perr)
		}
	}
	return resp, err
}

// begin loads or creates the chat record and the turn for requestID.
//
// One turn at a time per conversation: the turn claims the conversation by
// a compare-and-set of the chat record, so of several requests waiting on
// one conversation (on any replicas) exactly one goes on; a turn of another
// request that is still moving is waited for, and one that stopped moving
// long ago was lost and is closed.
func (c *Chat) begin(ctx context.Context, conv, requestID, message string) (*session, error) {
	s := &session{conv: conv}
	for {
		if err := c.load(ctx, s); err != nil {
			return nil, err
		}
		for _, d := range s.rec.Done {
			if d.RequestID == requestID {
				return s, nil
			}
		}
		cur := s.rec.Current
		if cur != nil && cur.RequestID == requestID {
			s.turn = cur
			return s, c.count(ctx, s)
		}
		if cur != nil && time.Since(cur.UpdatedAt) <= staleTurn {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		if cur != nil { // a turn that never finished: remember what was asked
			s.rec.Turns = append(s.rec.Turns, []openai.ChatCompletionMessage{
				{Role: openai.ChatMessageRoleUser, Content: cur.Message},
				{Role: openai.ChatMessageRoleAssistant, Content: "(this turn was interrupted before it finished)"},
			})
		}
		s.turn = &chatTurn{RequestID: requestID, Message: message, StartedAt: time.Now().UTC(),
			Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: message}}}
		s.rec.Current = s.turn
		err := c.put(ctx, s)
		if isConflict(err) {
			continue // another request claimed the conversation first
		}
		if err != nil {
			return nil, err
		}
		return s, c.count(ctx, s)
	}
}

// count makes the claimed turn the conversation's next one, once: the
// turn's number is saved in the chat record before the conversation counts
// it, so a turn resumed after a crash in between counts it once.
func (c *Chat) count(ctx context.Context, s *session) error {
	t := s.turn
	if t.Number == 0 {
		st, err := c.store.Conversation(ctx, s.conv)
		switch {
		case errors.Is(err, ErrNotFound):
			t.Number = 1
		case err != nil:
			return err
		default:
			t.Number = st.Turns + 1
		}
		if err := c.save(ctx, s); err != nil {
			return err
		}
	}
	_, err := c.store.UpdateConversation(ctx, s.conv, func(st *schemas.ConversationState) error {
		if st.Turns >= t.Number {
			return ErrUnchanged
		}
		st.Turns = t.Number
		st.History = append(st.History, schemas.HistoryEntry{At: time.Now().UTC(), Kind: "user", Text: t.Message})
		return nil
	})
	return err
}

func (c *Chat) key(conv string) string { return conv + ".chat" }

func (c *Chat) load(ctx context.Context, s *session) error {
	e, err := c.kv.Get(ctx, c.key(s.conv))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		s.rec, s.rev = chatRecord{}, 0
		return nil
	case err != nil:
		return fmt.Errorf("reading chat of conversation %q: %w", s.conv, err)
	}
	var rec chatRecord
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return fmt.Errorf("chat of conversation %q does not decode: %w", s.conv, err)
	}
	s.rec, s.rev = rec, e.Revision()
	return nil
}

// save writes the record with compare-and-set. Losing the race to a
// replica that has the same turn further along ends this run of the turn.
func (c *Chat) save(ctx context.Context, s *session) error {
	err := c.put(ctx, s)
	if err == nil || !isConflict(err) {
		return err
	}
	mine := *s.turn
	other := &session{conv: s.conv}
	if err := c.load(ctx, other); err != nil {
		return err
	}
	if cur := other.rec.Current; cur == nil || cur.RequestID != mine.RequestID || len(cur.Messages) >= len(mine.Messages) {
		return errTakenOver
	}
	other.rec.Current = &mine
	s.rec, s.rev, s.turn = other.rec, other.rev, other.rec.Current
	return c.save(ctx, s)
}

// put writes the chat record with compare-and-set on the revision s read
// or last wrote; a conflict is returned as is (isConflict).
func (c *Chat) put(ctx context.Context, s *session) error {
	if s.rec.Current != nil {
		s.rec.Current.UpdatedAt = time.Now().UTC()
	}
	b, err := json.Marshal(s.rec)
	if err != nil {
		return err
	}
	var rev uint64
	if s.rev == 0 {
		rev, err = c.kv.Create(ctx, c.key(s.conv), b)
	} else {
		rev, err = c.kv.Update(ctx, c.key(s.conv), b, s.rev)
	}
	if err != nil {
		if isConflict(err) {
			return err
		}
		return fmt.Errorf("saving chat of conversation %q: %w", s.conv, err)
	}
	s.rev = rev
	return nil
}

// runLLM is the ReAct loop: think, call the chosen agents, observe, repeat.
func (c *Chat) runLLM(ctx context.Context, s *session) (schemas.ChatResponse, error) {
	t := s.turn
	for {
		if calls := pendingCalls(t.Messages); len(calls) > 0 {
			if err := c.runCalls(ctx, s, calls); err != nil {
				return schemas.ChatResponse{}, err
			}
			continue
		}
		if last := t.Messages[len(t.Messages)-1]; last.Role == openai.ChatMessageRoleAssistant {
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
		contracts := c.contracts()
		req := openai.ChatCompletionRequest{Messages: c.prompt(s, st), Tools: Tools(contracts, c.router)}
		c.progress(ctx, s.conv, "", "", "thinking")
		resp, usage, err := c.llm.Chat(ctx, req)
		t.Steps++
		t.Tokens = t.Tokens.Add(usage.Tokens)
		t.Cost += usage.Cost
		if err != nil {
			if ctx.Err() != nil {
				return schemas.ChatResponse{}, ctx.Err()
			}
			return c.finish(ctx, s, schemas.ChatFailed, "The language model could not be reached: "+err.Error(), err)
		}
		msg := resp.Choices[0].Message
		msg.Role = openai.ChatMessageRoleAssistant
		msg.ReasoningContent = ""
		for i := range msg.ToolCalls {
			if msg.ToolCalls[i].ID == "" {
				msg.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", t.Steps, i)
			}
			msg.ToolCalls[i].Type = openai.ToolTypeFunction
			msg.ToolCalls[i].Index = nil
		}
		t.Messages = append(t.Messages, msg)
		if err := c.save(ctx, s); err != nil {
			return schemas.ChatResponse{}, err
		}
	}
}

// pendingCalls returns the tool calls of the last assistant message that
// have no tool message yet.
func pendingCalls(msgs []openai.ChatCompletionMessage) []openai.ToolCall {
	i := len(msgs) - 1
	answered := map[string]bool{}
	for ; i >= 0 && msgs[i].Role == openai.ChatMessageRoleTool; i-- {
		answered[msgs[i].ToolCallID] = true
	}
	if i < 0 || msgs[i].Role != openai.ChatMessageRoleAssistant {
		return nil
	}
	var out []openai.ToolCall
	for _, tc := range msgs[i].ToolCalls {
		if !answered[tc.ID] {
			out = append(out, tc)
		}
	}
	return out
}

// runCalls dispatches calls in parallel, appends their observations in the
// order of the calls and saves the turn.
func (c *Chat) runCalls(ctx context.Context, s *session, calls []openai.ToolCall) error {
	t := s.turn
	obs := make([]string, len(calls))
	recs := make([]schemas.ToolCallRecord, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		taskID := fmt.Sprintf("%s-t%d-%s", s.conv, t.Number, taskToken(call.ID))
		wg.Go(func() { obs[i], recs[i] = c.callAgent(ctx, s, taskID, call.Function.Name, call.Function.Arguments) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for i, call := range calls {
		t.Messages = append(t.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: call.ID, Name: call.Function.Name, Content: obs[i]})
		t.ToolCalls = append(t.ToolCalls, recs[i])
	}
	return c.save(ctx, s)
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
	args, err := ParseToolArgs(contract, rawArgs, st.Slots)
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
	task := schemas.TaskRequest{Inputs: inputs, Params: args.Params, Instruction: s.turn.Message, TimeoutMS: timeout.Milliseconds()}
	meta := DispatchMeta{TaskID: taskID, ConversationID: s.conv, ReplyTo: c.names.Result(taskID), Deadline: time.Now().Add(timeout)}
	c.progress(ctx, s.conv, taskID, agent, "calling "+agent)
	if _, err := c.dispatch.Dispatch(ctx, agent, task, meta); err != nil {
		return fail(fmt.Sprintf("%s could not be called: %v", agent, err))
	}
	actx, cancel := context.WithTimeout(ctx, timeout+awaitGrace)
	res, err := c.dispatch.Await(actx, meta.ReplyTo, taskID)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return fail(ctx.Err().Error())
		}
		if errors.Is(err, context.DeadlineExceeded) {
			c.progress(ctx, s.conv, taskID, agent, agent+" timed out")
			return fail(fmt.Sprintf("%s did not answer within %s (timeout). Try again, try another agent, or tell the user.", agent, timeout))
		}
		return fail(fmt.Sprintf("%s: waiting for the result failed: %v", agent, err))
	}
	result := res.Result
	if result.Agent == "" {
		result.Agent = agent
	}
	if _, err := c.store.UpdateConversation(ctx, s.conv, func(st *schemas.ConversationState) error {
		changed, err := c.router.Apply(ctx, st, contract, taskID, result)
		if err == nil && !changed {
			return ErrUnchanged
		}
		return err
	}); err != nil {
		return fail(fmt.Sprintf("%s answered, but its outputs could not be stored: %v", agent, err))
	}
	c.progress(ctx, s.conv, taskID, agent, ProgressLine(agent, result))
	rec.Success = result.Success
	rec.Summary = result.Summary
	rec.DurationMS = time.Since(start).Milliseconds()
	if !result.Success {
		rec.Error = result.Err().Error()
	}
	return Observation(agent, result, c.router), rec
}

// buildInputs fills the contract's inputs from state, with the slots the
// arguments referenced taking precedence.
func (c *Chat) buildInputs(contract schemas.AgentContract, args ToolArgs, slots map[string]schemas.TypedValue) (map[string]schemas.TypedValue, error) {
	rest := contract
	rest.Inputs = slices.DeleteFunc(slices.Clone(contract.Inputs), func(in schemas.TypedInput) bool {
		_, referenced := args.Refs[in.Name]
		return referenced
	})
	inputs, err := c.inputs.Build(rest, slots)
	if err != nil {
		return nil, err
	}
	for in, slot := range args.Refs {
		inputs[in] = slots[slot]
	}
	return inputs, nil
}

func (c *Chat) lookup(name string) (AgentInfo, bool) {
	for _, a := range c.registry.Agents() {
		if a.Contract.Name == name {
			return a, true
		}
	}
	return AgentInfo{}, false
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
	st, err := c.store.Conversation(ctx, conv)
	if errors.Is(err, ErrNotFound) {
		return schemas.NewConversationState(conv), nil
	}
	return st, err
}

// prompt is what the model reads: the system prompt, the state as Data,
// the earlier turns that fit the history budget, then this turn.
func (c *Chat) prompt(s *session, st *schemas.ConversationState) []openai.ChatCompletionMessage {
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: c.system}}
	msgs = append(msgs, RenderData([]Data{StateData(st)})...)
	msgs = append(msgs, PruneHistory(s.rec.Turns, c.budget)...)
	return append(msgs, s.turn.Messages...)
}

// PruneHistory returns the newest whole turns whose estimated tokens fit
// budget, oldest first. Turns are kept or dropped whole, so a tool message
// never loses the assistant message that called it.
func PruneHistory(turns [][]openai.ChatCompletionMessage, budget int) []openai.ChatCompletionMessage {
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
	var out []openai.ChatCompletionMessage
	for _, t := range turns[first:] {
		out = append(out, t...)
	}
	return out
}

// EstimateTokens guesses a message's size in tokens (4 characters a token,
// plus a little per message).
func EstimateTokens(m openai.ChatCompletionMessage) int {
	n := len(m.Content) + len(m.Name)
	for _, tc := range m.ToolCalls {
		n += len(tc.Function.Name) + len(tc.Function.Arguments)
	}
	return n/4 + 4
}

// finish ends the turn: it stores the response in the record (so a
// redelivered request gets the same answer), publishes it, and notes the
// answer in the conversation's history.
func (c *Chat) finish(ctx context.Context, s *session, state, output string, cause error) (schemas.ChatResponse, error) {
	t := s.turn
	resp := schemas.ChatResponse{
		ConversationID: s.conv, Output: output, State: state, Steps: t.Steps,
		DurationMS: time.Since(t.StartedAt).Milliseconds(), Planner: c.Planner(),
		ToolCalls: t.ToolCalls, Tokens: t.Tokens, Cost: t.Cost,
	}
	if cause != nil {
		resp.Error = cause.Error()
	}
	turnMsgs := slices.Clone(t.Messages)
	if last := turnMsgs[len(turnMsgs)-1]; last.Role != openai.ChatMessageRoleAssistant || len(last.ToolCalls) > 0 {
		turnMsgs = append(turnMsgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: output})
	}
	s.rec.Turns = append(s.rec.Turns, turnMsgs)
	if len(s.rec.Turns) > maxRememberedTurns {
		s.rec.Turns = s.rec.Turns[len(s.rec.Turns)-maxRememberedTurns:]
	}
	s.rec.Current = nil
	s.rec.Done = append(s.rec.Done, doneTurn{RequestID: t.RequestID, Response: resp})
	if len(s.rec.Done) > maxDoneTurns {
		s.rec.Done = s.rec.Done[len(s.rec.Done)-maxDoneTurns:]
	}
	if err := c.save(ctx, s); err != nil {
		return resp, err
	}
	if _, err := c.store.UpdateConversation(ctx, s.conv, func(st *schemas.ConversationState) error {
		st.History = append(st.History, schemas.HistoryEntry{At: time.Now().UTC(), Kind: "assistant", Text: output})
		return nil
	}); err != nil {
		c.log.Warn("chat: noting the answer in history", "conversation", s.conv, "err", err)
	}
	return resp, c.publish(ctx, s.conv, bus.TypeChatResponded, resp, "chat-"+t.RequestID)
}

// lastResults describes the latest tool results of the turn in one line.
func (c *Chat) lastResults(t *chatTurn) string {
	if len(t.ToolCalls) == 0 {
		return "No agent was called."
	}
	var parts []string
	for _, r := range t.ToolCalls[max(0, len(t.ToolCalls)-3):] {
		if r.Success {
			parts = append(parts, fmt.Sprintf("%s: %s", r.Agent, truncate(r.Summary, 120)))
		} else {
			parts = append(parts, fmt.Sprintf("%s failed", r.Agent))
		}
	}
	return "Last results: " + strings.Join(parts, "; ") + "."
}

// progress publishes a chat progress event; failures are only logged.
func (c *Chat) progress(ctx context.Context, conv, taskID, agent, message string) {
	p := schemas.TaskProgress{TaskID: taskID, Agent: agent, Message: message}
	if err := c.publish(ctx, conv, TypeChatProgress, p, ""); err != nil {
		c.log.Debug("chat progress", "conversation", conv, "err", err)
	}
}

// publish sends an event on mesh.events.<conv>.chat through JetStream;
// msgID, when set, makes a republished event a duplicate the stream drops.
func (c *Chat) publish(ctx context.Context, conv, typ string, data any, msgID string) error {
	ev, err := bus.NewEvent(typ, c.source, data)
	if err != nil {
		return err
	}
	ev.SetExt(bus.ExtConversationID, conv)
	msg, err := bus.Encode(c.names.Events(conv, "chat"), ev)
	if err != nil {
		return err
	}
	if msgID != "" {
		msg.Header.Set(jetstream.MsgIDHeader, msgID)
	}
	if _, err := c.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publishing %s for conversation %s: %w", typ, conv, err)
	}
	return nil
}

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
		call := openai.ToolCall{ID: fmt.Sprintf("plan_%d", i), Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: step.Agent, Arguments: string(args)}}
		t.Steps++
		t.Messages = append(t.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{call}})
		if err := c.runCalls(ctx, s, []openai.ToolCall{call}); err != nil {
			return schemas.ChatResponse{}, err
		}
		if last := t.ToolCalls[len(t.ToolCalls)-1]; !last.Success {
			return c.finish(ctx, s, schemas.ChatFailed, c.offlineOutput(t, "stopped because "+last.Agent+" failed: "+last.Error), errors.New(last.Error))
		}
	}
	return c.finish(ctx, s, schemas.ChatCompleted, c.offlineOutput(t, ""), nil)
}

func (c *Chat) offlineOutput(t *chatTurn, ending string) string {
	var b strings.Builder
	b.WriteString("The offline planner answered (no LLM is configured): ran ")
	for i, st := range t.Plan {
		if i > 0 {
			b.WriteString(" -> ")
		}
		b.WriteString(st.Agent)
	}
	b.WriteString(".")
	for i, r := range t.ToolCalls {
		obs := ""
		for _, m := range t.Messages {
			if m.Role == openai.ChatMessageRoleTool && m.ToolCallID == fmt.Sprintf("plan_%d", i) {
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

// Handler adapts the chat loop to the orchestrator's chat hook.
func (c *Chat) Handler() ChatHandler {
	return func(ctx context.Context, ev bus.Event) error {
		_, err := c.HandleEvent(ctx, ev)
		return err
	}
}

// AttachChat builds a chat loop that shares o's state store, router,
// dispatcher and registry, and makes it o's chat handler. Call it after New
// and before Run.
func AttachChat(ctx context.Context, o *Orchestrator, js jetstream.JetStream, opts ...ChatOption) (*Chat, error) {
	kv, err := js.KeyValue(ctx, o.Names().ConversationsBucket())
	if err != nil {
		return nil, fmt.Errorf("chat: opening bucket %s: %w", o.Names().ConversationsBucket(), err)
	}
	opts = append([]ChatOption{WithChatState(o.Store(), o.Router(), o.Dispatcher())}, opts...)
	c, err := NewChat(js, o.Names(), kv, o.Registry(), opts...)
	if err != nil {
		return nil, err
	}
	o.SetChatHandler(c.Handler())
	return c, nil
}

// SendChat publishes an io.agentmesh.chat.requested event on
// mesh.chat.request with a JetStream publish (the ack says an orchestrator
// will take it) and returns the conversation id (conversationID, or the
// event id for a new conversation) and the request's event id.
func SendChat(ctx context.Context, js jetstream.JetStream, names bus.Names, conversationID, message, source string) (conv, requestID string, err error) {
	ev, conv, err := NewChatRequest(conversationID, message, source)
	if err != nil {
		return "", "", err
	}
	return conv, ev.ID, PublishChatRequest(ctx, js, names, ev)
}

// NewChatRequest builds the io.agentmesh.chat.requested event of a turn and
// returns it with its conversation id (a new conversation is named by the
// event id), so a client can follow the conversation before publishing.
func NewChatRequest(conversationID, message, source string) (bus.Event, string, error) {
	if conversationID != "" {
		if err := bus.ValidateToken("conversation id", conversationID); err != nil {
			return bus.Event{}, "", err
		}
	}
	if strings.TrimSpace(message) == "" {
		return bus.Event{}, "", errors.New("chat: the message is empty; say what the mesh should do")
	}
	if source == "" {
		source = "agentmesh/chat"
	}
	ev, err := bus.NewEvent(bus.TypeChatRequested, source, schemas.ChatRequest{ConversationID: conversationID, Message: message})
	if err != nil {
		return bus.Event{}, "", err
	}
	conv := conversationID
	if conv == "" {
		conv = ev.ID
	}
	ev.SetExt(bus.ExtConversationID, conv)
	return ev, conv, nil
}

// PublishChatRequest publishes ev on mesh.chat.request and waits for the
// JetStream ack. The event id is the message id, so a retried publish is
// stored once.
func PublishChatRequest(ctx context.Context, js jetstream.JetStream, names bus.Names, ev bus.Event) error {
	msg, err := bus.Encode(names.ChatRequest(), ev)
	if err != nil {
		return err
	}
	msg.Header.Set(jetstream.MsgIDHeader, ev.ID)
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("chat: publishing the request on %s: %w (is NATS with JetStream running and provisioned?)", names.ChatRequest(), err)
	}
	return nil
}
