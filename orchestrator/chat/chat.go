package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/memory"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// Planner names in ChatResponse.Planner.
const (
	PlannerLLM     = "llm"
	PlannerOffline = "offline"
)

// Defaults of the chat loop.
const (
	DefaultMaxSteps      = 10
	DefaultHistoryBudget = 6000 // tokens of earlier turns shown to the model
	awaitGrace           = 2 * time.Second
	staleTurn            = 3 * time.Minute // a turn not saved for this long was lost
)

// DefaultSystemPrompt tells the model how the mesh works.
const DefaultSystemPrompt = `You are the orchestrator of agentmesh, a mesh of independent agents. Fulfil the user's request by calling agents, which are your tools.
Each agent reads its inputs from the conversation state automatically (by data type) and its outputs are stored back into state slots; the current state is shown to you as ¶state. To use a particular slot as an input, pass "†state.<slot>" as the argument.
Call agents one after another when one needs another's output, or several at once when they are independent. If a call fails, read the observation and recover or explain. If you cannot go on without something only the user can tell you, call ask_user with your question.
When the request is done, answer in one or two plain sentences with counts. Never list file IDs.`

// AgentLister is the live view of agents the chat loop offers as tools
// (*meshcore.Registry implements it).
type AgentLister interface {
	Agents() []meshcore.AgentInfo
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
	registry AgentLister
	store    *state.Store
	router   *route.Router
	inputs   *route.InputBuilder
	dispatch *meshcore.Dispatcher
	observer schemas.Observer

	llm         llm.Model
	guard       *llm.Guard // policies of model and agent calls; nil: none
	spend       spendLimits
	maxSteps    int
	toolTimeout time.Duration
	budget      int
	system      string
	source      string
	log         *slog.Logger

	memory        *memory.Store // facts across conversations (memory.go); nil: none
	rememberSlots []string
}

// Option configures a Chat.
type Option func(*Chat)

// WithLLM sets the model client; without it (or with nil) the offline
// planner answers.
func WithLLM(c llm.Model) Option {
	return func(ch *Chat) {
		if cl, ok := c.(*llm.Client); ok && cl == nil {
			c = nil // a nil client is no model
		}
		ch.llm = c
	}
}

// WithMaxSteps sets the step limit of a turn: model calls with the LLM,
// agent calls with the offline planner (default 10).
func WithMaxSteps(n int) Option { return func(ch *Chat) { ch.maxSteps = n } }

// WithToolTimeout sets how long an agent call may take when its contract
// names no timeout (default schemas.DefaultTaskTimeout).
func WithToolTimeout(d time.Duration) Option { return func(ch *Chat) { ch.toolTimeout = d } }

// WithHistoryBudget sets how many tokens (estimated) of earlier turns are
// shown to the model; older turns are pruned first (default 6000).
func WithHistoryBudget(tokens int) Option { return func(ch *Chat) { ch.budget = tokens } }

// WithSystemPrompt replaces DefaultSystemPrompt.
func WithSystemPrompt(s string) Option { return func(ch *Chat) { ch.system = s } }

// WithRouter shares the replica's router (default a new route.Router).
func WithRouter(r *route.Router) Option { return func(ch *Chat) { ch.router = r } }

// WithDispatcher shares the replica's dispatcher (default one on js).
func WithDispatcher(d *meshcore.Dispatcher) Option { return func(ch *Chat) { ch.dispatch = d } }

// WithObserver reports model calls (schemas.LLMCalled) and ended turns
// (schemas.ChatTurnEnded) to o.
func WithObserver(o schemas.Observer) Option { return func(ch *Chat) { ch.observer = o } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(ch *Chat) { ch.log = l } }

// WithNames sets the subject and bucket names (default prefix "mesh").
func WithNames(n bus.Names) Option { return func(ch *Chat) { ch.names = n } }

// WithStore keeps conversations and the loop's own memory in s (required).
func WithStore(s *state.Store) Option { return func(ch *Chat) { ch.store = s } }

// WithRegistry offers the agents of r as tools (required).
func WithRegistry(r AgentLister) Option { return func(ch *Chat) { ch.registry = r } }

// New returns a chat loop that publishes with js. Its options:
//   - what it works with: WithStore and WithRegistry (both required),
//     WithNames, WithRouter, WithDispatcher;
//   - the model and its limits: WithLLM (without it the offline planner
//     answers), WithGuard, WithMaxSteps, WithToolTimeout, WithHistoryBudget,
//     WithSystemPrompt, WithTurnBudget, WithClientBudget;
//   - memory across conversations: WithMemory;
//   - reporting: WithObserver, WithLogger.
func New(js jetstream.JetStream, opts ...Option) (*Chat, error) {
	c := &Chat{
		js: js, names: bus.MustNames(bus.DefaultPrefix), observer: schemas.NopObserver{},
		maxSteps: DefaultMaxSteps, toolTimeout: schemas.DefaultTaskTimeout, budget: DefaultHistoryBudget,
		system: DefaultSystemPrompt, source: "agentmesh/orchestrator/chat", log: slog.Default(),
	}
	for _, o := range opts {
		o(c)
	}
	if js == nil || c.store == nil || c.registry == nil {
		return nil, errors.New("chat: New needs a JetStream handle, a state store (WithStore) and a registry (WithRegistry)")
	}
	c.log = telemetry.Logger(c.log)
	if c.llm != nil {
		c.llm = c.guard.Model(c.llm)
	}
	if c.router == nil {
		c.router = route.NewRouter()
	}
	if c.dispatch == nil {
		c.dispatch = meshcore.NewDispatcher(js, c.names, c.source).WithLogger(c.log)
	}
	c.inputs = route.NewInputBuilder(c.router)
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

// HandleEvent runs the turn asked for by an io.agentmesh.chat.requested
// event to its end and publishes io.agentmesh.chat.responded. It is
// idempotent by event id: a redelivered request whose turn finished
// republishes the same response; one whose turn is in progress resumes it.
// A bad request is answered with a failed response, not an error (see
// Refuse); the error is for failures the caller should log or retry.
//
// The turn is a span "chat turn", a child of the request's traceparent;
// every log line of the turn carries the conversation and request ids.
func (c *Chat) HandleEvent(ctx context.Context, ev bus.Event) (resp schemas.ChatResponse, err error) {
	// The conversation id first: it says where the answer goes.
	var req schemas.ChatRequest
	_ = ev.DataAs(&req)
	conv := req.ConversationID
	if conv == "" {
		conv = ev.ID
	}
	ctx, span := startTurn(ctx, ev, conv)
	defer func() { endTurn(span, resp, err) }()
	if verr := bus.ValidateToken("conversation id", conv); verr != nil {
		err = schemas.WithCode(schemas.CodeInvalidID, verr)
	} else if derr := bus.DecodeData(ev, &req, func(b []byte) error { return schemas.ValidateJSON(schemas.SchemaChatRequest, b) }); derr != nil {
		err = schemas.WithCode(schemas.CodeMalformedEvent, derr)
	} else if !utf8.Valid(ev.Data) {
		// JSON is UTF-8: a decoder would turn the bad bytes into U+FFFD
		// and the model would answer a message nobody wrote.
		err = schemas.WithCode(schemas.CodeMalformedEvent, fmt.Errorf("%w: the request's data is not valid UTF-8: send the message as UTF-8 text", bus.ErrInvalidData))
	}
	ext := ev.Ext(bus.ExtConversationID)
	if err == nil && ext != "" && ext != conv {
		err = schemas.WithCode(schemas.CodeMalformedEvent, fmt.Errorf("%w: the conversationid extension %q names another conversation than the request's %q (its data's conversation_id, else its id): set both to the same id, or leave the extension out",
			bus.ErrInvalidAttribute, ext, conv))
	}
	if err == nil {
		err = checkMessage(req.Message)
	}
	if err == nil && req.Rewind != nil {
		if err = c.rewind(ctx, conv, *req.Rewind); err != nil && schemas.CodeOr(err, "") == "" {
			return schemas.ChatResponse{}, err // the store's trouble: the request is tried again
		}
	}
	if err != nil {
		if ext != "" && ext != conv && bus.ValidateToken("", ext) == nil {
			// Its sender may follow either conversation: both hear.
			resp, _ := c.Refuse(ctx, ev.ID, conv, err)
			resp.ConversationID = ext
			return resp, unanswered(c.publish(ctx, ext, bus.TypeChatResponded, resp, "chat-"+ev.ID+"-ext"))
		}
		return c.Refuse(ctx, ev.ID, conv, err)
	}
	return c.Handle(ctx, conv, ev.ID, req.Message)
}

// Refuse answers request requestID, which names conversation conv, with a
// failed response carrying cause's code, touching no state. The answer goes
// to mesh.events.<conv>.chat, or, when conv cannot be a subject token, to
// mesh.events.<requestID>.chat; when neither can, nothing is published and
// the error wraps bus.ErrNoReplySubject (the orchestrator dead-letters it).
func (c *Chat) Refuse(ctx context.Context, requestID, conv string, cause error) (schemas.ChatResponse, error) {
	resp := schemas.ChatResponse{ConversationID: conv, State: schemas.ChatFailed, Planner: c.Planner(),
		Output: "The chat request was refused: " + cause.Error(), Error: cause.Error(), Code: schemas.CodeOf(cause)}
	to := bus.ReplyToken(conv, requestID)
	if to == "" {
		return resp, fmt.Errorf("%w: %w", bus.ErrNoReplySubject, &schemas.ResultError{Code: resp.Code, Message: cause.Error()})
	}
	resp.ConversationID = to
	return resp, c.answer(ctx, to, requestID, resp)
}

// Handle runs one turn of conversation conv for the request requestID
// (the event id) with message, resuming it when it was started before.
// Every turn ends with one response: a turn that fails inside the mesh
// (state that does not decode or does not fit, KV trouble) is closed as
// failed, so the conversation's next turn does not wait for it.
func (c *Chat) Handle(ctx context.Context, conv, requestID, message string) (schemas.ChatResponse, error) {
	ctx = telemetry.WithLogAttrs(ctx, "conversation", conv, "request", requestID)
	s, err := c.begin(ctx, conv, requestID, message)
	if errors.Is(err, ErrNotOwner) {
		return c.Refuse(ctx, requestID, conv, err)
	}
	if s != nil {
		ctx = withOwner(ctx, s.rec.Owner) // the turn's events go to the conversation's owner
	}
	if err == nil && s.turn == nil { // already answered
		resp, err := c.answered(ctx, s, requestID)
		if err != nil {
			return resp, err
		}
		return resp, unanswered(c.publish(ctx, conv, bus.TypeChatResponded, resp, "chat-"+requestID))
	}
	var resp schemas.ChatResponse
	switch {
	case err != nil:
	case c.llm != nil:
		resp, err = c.runLLM(ctx, s)
	default:
		resp, err = c.runOffline(ctx, s)
	}
	if errors.Is(err, errTakenOver) {
		c.log.InfoContext(ctx, "chat turn taken over")
		return resp, nil
	}
	if err != nil && ctx.Err() == nil {
		// The mesh itself failed: say so rather than leave the client
		// waiting. A stopping replica says nothing; the redelivered
		// request resumes the turn elsewhere.
		return c.fail(ctx, s, conv, requestID, err)
	}
	return resp, err
}

// fail ends a turn that failed inside the mesh with a failed response. A
// turn that claimed the conversation (s.turn is its current one) is
// finished, which releases the claim; otherwise only the answer goes out.
func (c *Chat) fail(ctx context.Context, s *session, conv, requestID string, cause error) (schemas.ChatResponse, error) {
	msg := "The turn failed inside the mesh: " + cause.Error()
	if s != nil && s.turn != nil && s.rec.Current == s.turn && len(s.turn.Messages) > 0 {
		resp, err := c.finish(ctx, s, schemas.ChatFailed, msg, cause)
		return resp, errors.Join(cause, err)
	}
	resp := schemas.ChatResponse{ConversationID: conv, State: schemas.ChatFailed, Planner: c.Planner(),
		Output: msg, Error: cause.Error(), Code: schemas.CodeOf(cause)}
	return resp, errors.Join(cause, c.answer(ctx, conv, requestID, resp))
}

// finish ends the turn: it stores the response in the record (so a
// redelivered request gets the same answer), publishes it, and notes the
// answer in the conversation's history.
func (c *Chat) finish(ctx context.Context, s *session, state, output string, cause error) (schemas.ChatResponse, error) {
	t := s.turn
	resp := schemas.ChatResponse{
		ConversationID: s.conv, Output: output, State: state, Steps: t.Steps,
		DurationMS: time.Since(t.StartedAt).Milliseconds(), Planner: c.Planner(),
		ToolCalls: t.ToolCalls, Usage: t.Usage, Budget: c.turnBudget(),
	}
	if cause != nil {
		resp.Error = cause.Error()
	}
	asked := state == schemas.ChatInputRequired && s.rec.Asked != nil
	if asked {
		resp.Question, resp.AskedBy = s.rec.Asked.Question, s.rec.Asked.AskedBy
	}
	if state == schemas.ChatCompleted {
		c.rememberSlotsOf(ctx, s)
	}
	if state == schemas.ChatFailed {
		resp.Code = schemas.CodeOf(cause)
		if resp.Code == "" {
			resp.Code = schemas.CodeAgentError
		}
	}
	turnMsgs := slices.Clone(t.Messages)
	if last := turnMsgs[len(turnMsgs)-1]; last.Role != llm.RoleAssistant || len(last.ToolCalls) > 0 {
		turnMsgs = append(turnMsgs, llm.Message{Role: llm.RoleAssistant, Content: output})
	}
	if asked { // an asked turn goes on in the next one, which carries its messages
		turnMsgs = nil
	}
	history := append([]schemas.HistoryEntry{{At: t.StartedAt, Kind: "user", Text: t.Message}}, t.Results...)
	history = append(history, schemas.HistoryEntry{At: time.Now().UTC(), Kind: "assistant", Text: output})
	// The turn's key first: a record that says the turn is done implies it.
	// A turn that failed before the conversation counted it (its state
	// could not be read) has no number and no key: a redelivery of its
	// request is refused the same way again.
	var err error
	if t.Number > 0 {
		err = c.storeTurn(ctx, s.conv, storedTurn{Number: t.Number, RequestID: t.RequestID, Messages: turnMsgs, History: history, Response: resp})
		if err == nil {
			err = c.store.PutTurnOf(ctx, s.conv, t.RequestID, t.Number)
		}
	}
	if err == nil {
		s.rec.Current = nil
		err = c.save(ctx, s)
	}
	if err != nil {
		if errors.Is(err, errTakenOver) || ctx.Err() != nil {
			return resp, err
		}
		// The answer cannot be stored: the client hears why instead.
		resp.State, resp.Error, resp.Code = schemas.ChatFailed, err.Error(), schemas.CodeOf(err)
		resp.Output = "The turn's answer could not be saved: " + err.Error()
		return resp, errors.Join(err, c.answer(ctx, s.conv, t.RequestID, resp))
	}
	if asked {
		if _, err := c.store.UpdateConversation(ctx, s.conv, func(st *schemas.ConversationState) error {
			st.InputRequired = output
			return nil
		}); err != nil {
			c.log.WarnContext(ctx, "chat: noting the question", "err", err)
		}
	}
	return resp, c.answer(ctx, s.conv, t.RequestID, resp)
}

// answer publishes the response that ends request requestID's turn (once:
// a redelivered request republishes its stored answer with publish) and
// tells the observer the turn ended.
func (c *Chat) answer(ctx context.Context, conv, requestID string, resp schemas.ChatResponse) error {
	c.observer.Observe(ctx, schemas.ChatTurnEnded{ConversationID: conv, State: resp.State, Steps: resp.Steps,
		Tokens: resp.Tokens, Cost: resp.Cost, Duration: time.Duration(resp.DurationMS) * time.Millisecond})
	return unanswered(c.publish(ctx, conv, bus.TypeChatResponded, resp, "chat-"+requestID))
}

// ErrUnanswered is in the error of a turn whose answer could not be
// published (the events stream did not store it for bus.TransientWait): its
// request must be delivered again, not acknowledged, or its sender never
// hears. Handling it again answers it once (a finished turn republishes its
// stored answer, under the same message id).
var ErrUnanswered = errors.New("the turn's answer was not published")

// unanswered marks the error of publishing an answer (nil stays nil).
func unanswered(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrUnanswered, err)
}

// progress publishes a chat progress event; failures are only logged.
func (c *Chat) progress(ctx context.Context, conv, taskID, agent, message string) {
	c.note(ctx, conv, schemas.TaskProgress{TaskID: taskID, Agent: agent, Message: message})
}

// note publishes p as the turn's progress.
func (c *Chat) note(ctx context.Context, conv string, p schemas.TaskProgress) {
	if err := c.publish(ctx, conv, bus.TypeChatProgress, p, ""); err != nil {
		c.log.DebugContext(ctx, "chat progress", "err", err)
	}
}

type ownerKey struct{}

// withOwner returns ctx carrying the owner of the conversation a turn
// works on, once its record is read.
func withOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// eventsOwner is the client whose subjects a turn's events go on: the
// conversation's owner once its record is read, before that (a request
// refused unread) the client that sent the request, who alone waits for
// the answer. "" is an unowned conversation's plain subject.
func eventsOwner(ctx context.Context) string {
	if owner, ok := ctx.Value(ownerKey{}).(string); ok {
		return owner
	}
	return bus.Requester(ctx)
}

// publish sends an event on mesh.events.<conv>.chat, or, for a
// conversation client <c> owns, mesh.events.<conv>.chat.<c> (eventsOwner),
// through JetStream; msgID, when set, makes a republished event a
// duplicate the stream drops.
func (c *Chat) publish(ctx context.Context, conv, typ string, data any, msgID string) error {
	ev, err := bus.NewEvent(typ, c.source, data)
	if err != nil {
		return err
	}
	ev.SetExt(bus.ExtConversationID, conv)
	msg, err := bus.Encode(c.names.ForClient(eventsOwner(ctx)).Events(conv, "chat"), ev)
	if err != nil {
		return err
	}
	if msgID != "" {
		msg.Header.Set(jetstream.MsgIDHeader, msgID)
	}
	if _, err := bus.Publish(ctx, c.js, msg); err != nil {
		return fmt.Errorf("publishing %s for conversation %s: %w", typ, conv, err)
	}
	return nil
}
