package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/schemas"
)

// maxMessageBytes is the mesh's limit on a chat message (the orchestrator
// answers too_large above it); the gateway refuses such a message before
// sending it.
const maxMessageBytes = 64 << 10

// ChatRequest is the body of POST /api/chat.
type ChatRequest struct {
	ConversationID string `json:"conversation_id,omitempty"`
	Message        string `json:"message"`
	// New starts a conversation named ConversationID; without it a
	// ConversationID the mesh does not know is refused (404), as
	// agentmesh chat --conversation does.
	New bool `json:"new,omitempty"`
	// Rewind starts a new conversation (ConversationID, which must not
	// exist, or one named by the request) as the conversation it names
	// was before the turn it names; the message is its next turn.
	Rewind *schemas.ChatRewind `json:"rewind,omitempty"`
}

// ChatAccepted is the answer of POST /api/chat: the turn is stored and an
// orchestrator will take it; follow it at /api/conversations/{id}/events.
type ChatAccepted struct {
	ConversationID string `json:"conversation_id"`
	RequestID      string `json:"request_id"`
}

func (g *Gateway) handleChat(w http.ResponseWriter, r *http.Request, c *conn) error {
	var req ChatRequest
	if err := g.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Message) == "" {
		return fail(schemas.CodeInvalidRequest, "%v", client.ErrEmptyMessage)
	}
	if len(req.Message) > maxMessageBytes {
		return fail(schemas.CodeTooLarge, "message is %d bytes, over the limit of %d: send a shorter message, and put large content in files (POST /api/files)", len(req.Message), maxMessageBytes)
	}
	if req.New && req.ConversationID == "" {
		return fail(schemas.CodeInvalidRequest, "new: true needs a conversation_id to name the new conversation")
	}
	if rw := req.Rewind; rw != nil {
		if err := bus.ValidateToken("conversation id", rw.ConversationID); err != nil {
			return fail(schemas.CodeInvalidID, "rewind: %v", err)
		}
		if rw.Turn < 1 {
			return fail(schemas.CodeInvalidRequest, "rewind: turn %d of conversation %s: turns count from 1", rw.Turn, rw.ConversationID)
		}
		if err := g.checkConversation(r.Context(), c, rw.ConversationID, false); err != nil {
			return err
		}
		req.New = true // a rewind starts a new conversation
	}
	if id := req.ConversationID; id != "" {
		if err := bus.ValidateToken("conversation id", id); err != nil {
			return fail(schemas.CodeInvalidID, "%v", err)
		}
		if err := g.checkConversation(r.Context(), c, id, req.New); err != nil {
			return err
		}
	}
	conv, reqID, err := client.SendChatRequest(r.Context(), c.js, c.names,
		schemas.ChatRequest{ConversationID: req.ConversationID, Message: req.Message, Rewind: req.Rewind}, g.cfg.source)
	if err != nil {
		return meshError("sending the chat request", err)
	}
	writeJSON(w, http.StatusAccepted, ChatAccepted{ConversationID: conv, RequestID: reqID})
	return nil
}

// checkConversation refuses an unknown conversation id (unless new) and a
// new one that exists, when this identity may read conversations.
func (g *Gateway) checkConversation(ctx context.Context, c *conn, id string, isNew bool) error {
	if c.store == nil {
		return nil // a client cannot tell; the orchestrator starts it if it is new
	}
	err := client.CheckConversation(ctx, c.res.Conversations, id)
	switch {
	case err == nil && isNew:
		return fail(schemas.CodeInvalidID, "conversation %q exists; leave out new to continue it, or choose another id", id)
	case errors.Is(err, client.ErrUnknownConversation) && !isNew:
		return fail(schemas.CodeNotFound, "no conversation %q; GET /api/conversations lists them, or send new: true to start one with this id", id)
	case err != nil && !errors.Is(err, client.ErrUnknownConversation):
		return meshError("looking up conversation "+id, err)
	}
	return nil
}

func (g *Gateway) handleConversations(w http.ResponseWriter, r *http.Request, c *conn) error {
	store, err := c.needStore()
	if err != nil {
		return err
	}
	return writeList(w, r, "conversations", conversationFields, store.RecentConversations)
}

// Conversation is GET /api/conversations/{id}: the stored state (slots and
// history) and every turn's answer as the mesh's events recorded it, with
// each tool call's inputs (arguments), outputs, duration, tokens and cost.
type Conversation struct {
	ID        string                        `json:"id"`
	Turns     []Turn                        `json:"turns"`
	Slots     map[string]schemas.TypedValue `json:"slots"`
	History   []schemas.HistoryEntry        `json:"history"`
	CreatedAt time.Time                     `json:"created_at"`
	UpdatedAt time.Time                     `json:"updated_at"`
	// Origin is, for a rewound conversation, the conversation and turn it
	// continues from before; its turns shows only its own turns, its
	// history the copied ones too.
	Origin *schemas.ChatRewind `json:"origin,omitempty"`
}

// Turn is one chat turn: the user's message and the mesh's answer.
type Turn struct {
	Message   string               `json:"message,omitempty"`
	At        time.Time            `json:"at"`
	Response  schemas.ChatResponse `json:"response"`
	ToolCalls []ToolCall           `json:"tool_calls"`
}

// ToolCall is one agent call of a turn with the outputs its result put in
// the conversation.
type ToolCall struct {
	schemas.ToolCallRecord
	Outputs map[string]schemas.TypedValue `json:"outputs,omitempty"`
}

func (g *Gateway) handleConversation(w http.ResponseWriter, r *http.Request, c *conn) error {
	id := r.PathValue("id")
	if err := bus.ValidateToken("conversation id", id); err != nil {
		return fail(schemas.CodeInvalidID, "%v", err)
	}
	store, err := c.needStore()
	if err != nil {
		return err
	}
	st, err := store.Conversation(r.Context(), id)
	if err != nil {
		if errors.Is(err, stateview.ErrNotFound) {
			return fail(schemas.CodeNotFound, "no conversation %q; GET /api/conversations lists them", id)
		}
		return meshError("reading conversation "+id, err)
	}
	answers, err := replay(r.Context(), c, c.names.EventsOf(id), bus.TypeChatResponded) // owned or not
	if err != nil {
		return meshError("reading the answers of conversation "+id, err)
	}
	view := conversationView(st, answers)
	c.toolOutputs(r.Context(), &view)
	writeJSON(w, http.StatusOK, view)
	return nil
}

// toolOutputs fills in each tool call's outputs from its result, kept in
// the results stream (24 hours by default) on mesh.result.<agent>.<task>;
// a result that is gone leaves what the history recorded.
func (c *conn) toolOutputs(ctx context.Context, v *Conversation) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for i := range v.Turns {
		for j := range v.Turns[i].ToolCalls {
			tc := &v.Turns[i].ToolCalls[j]
			if tc.TaskID == "" || bus.ValidateAgentName(tc.Agent) != nil || bus.ValidateToken("task id", tc.TaskID) != nil {
				continue
			}
			raw, err := c.res.Results.GetLastMsgForSubject(ctx, c.names.Result(tc.Agent, tc.TaskID))
			if err != nil {
				continue
			}
			ev, err := bus.Decode(&nats.Msg{Subject: raw.Subject, Header: raw.Header, Data: raw.Data})
			var res schemas.AgentResult
			if err == nil && ev.DataAs(&res) == nil && len(res.Outputs) > 0 {
				tc.Outputs = res.Outputs
			}
		}
	}
}

// conversationView pairs each answer with the user message before it in
// the history, and each tool call with the outputs recorded for its task.
func conversationView(st *schemas.ConversationState, answers []bus.Event) Conversation {
	out := Conversation{ID: st.ID, Slots: st.Slots, History: st.History, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, Turns: []Turn{}, Origin: st.Origin}
	if out.Slots == nil {
		out.Slots = map[string]schemas.TypedValue{}
	}
	if out.History == nil {
		out.History = []schemas.HistoryEntry{}
	}
	outputs := map[string]map[string]schemas.TypedValue{}
	var users []schemas.HistoryEntry
	for _, h := range st.History {
		if h.TaskID != "" && len(h.Outputs) > 0 {
			outputs[h.TaskID] = h.Outputs
		}
		if h.Kind == "user" {
			users = append(users, h)
		}
	}
	for _, ev := range answers {
		var resp schemas.ChatResponse
		if ev.DataAs(&resp) != nil {
			continue
		}
		t := Turn{At: ev.Time, Response: resp, ToolCalls: []ToolCall{}}
		for _, u := range users {
			if !u.At.After(ev.Time) {
				t.Message = u.Text
			}
		}
		for _, tc := range resp.ToolCalls {
			t.ToolCalls = append(t.ToolCalls, ToolCall{ToolCallRecord: tc, Outputs: outputs[tc.TaskID]})
		}
		out.Turns = append(out.Turns, t)
	}
	return out
}

func (g *Gateway) handleConversationEvents(w http.ResponseWriter, r *http.Request, c *conn) error {
	id := r.PathValue("id")
	if err := bus.ValidateToken("conversation id", id); err != nil {
		return fail(schemas.CodeInvalidID, "%v", err)
	}
	return g.followID(w, r, c, id)
}

// followID streams every event of a run or conversation, from the start
// of what the events stream holds (or, with ?from=now, only new ones), and
// the text its models write as they write it (TypeDelta; not with
// ?deltas=0).
func (g *Gateway) followID(w http.ResponseWriter, r *http.Request, c *conn, id string) error {
	fromNow := r.URL.Query().Get("from") == "now"
	ctx := r.Context()
	on, err := deltasAsked(r)
	if err != nil {
		return err
	}
	var deltas <-chan *nats.Msg
	if on {
		d, stopDeltas, err := followDeltas(c, id)
		if err != nil {
			return meshError("following the text of "+id, err)
		}
		defer stopDeltas()
		deltas = d
	}
	ch, stop, err := client.Follow(ctx, c.js, c.names, c.names.EventsOf(id), fromNow)
	if err != nil {
		return meshError("following "+id, err)
	}
	defer stop()
	return streamWithDeltas(ctx, w, r, ch, nil, deltas)
}

// replay reads the events stored on subject up to now, keeping those of
// type typ (all when empty).
func replay(ctx context.Context, c *conn, subject, typ string) ([]bus.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cons, err := c.res.Events.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return nil, err
	}
	info := cons.CachedInfo()
	defer func() { // not left for the server's inactivity timer: a page view must not pile consumers up
		// Detached from the request, which may have ended, and bounded.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer dcancel()
		_ = c.res.Events.DeleteConsumer(dctx, info.Name)
	}()
	pending := info.NumPending
	var out []bus.Event
	for pending > 0 {
		batch, err := cons.Fetch(int(min(pending, 256)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			pending--
			ev, err := bus.DecodeJS(m)
			if err != nil || (typ != "" && ev.Type != typ) {
				continue
			}
			out = append(out, ev)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, err
		}
		if n == 0 {
			break
		}
	}
	return out, nil
}

// deltasAsked reads ?deltas: the text models write is in a run's or
// conversation's stream unless it says false (or 0).
func deltasAsked(r *http.Request) (bool, error) {
	switch v := r.URL.Query().Get("deltas"); v {
	case "", "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	default:
		return false, fail(schemas.CodeInvalidRequest, "?deltas=%s: give true or false", v)
	}
}
