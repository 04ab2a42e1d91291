package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// SendChat publishes an io.agentmesh.chat.requested event on
// names.ChatRequest() (mesh.chat.request, or the client's own subject for
// names.ForClient) with a JetStream publish (the ack says an orchestrator
// will take it) and returns the conversation id (conversationID, or the
// event id for a new conversation) and the request's event id.
//
// It records a producer span "chat send" whose context the request
// carries as its traceparent, so the turn's spans join its trace.
func SendChat(ctx context.Context, js jetstream.JetStream, names bus.Names, conversationID, message, source string) (conv, requestID string, err error) {
	return SendChatRequest(ctx, js, names, schemas.ChatRequest{ConversationID: conversationID, Message: message}, source)
}

// SendChatRequest is SendChat for a whole request (one that rewinds a
// conversation, say).
func SendChatRequest(ctx context.Context, js jetstream.JetStream, names bus.Names, req schemas.ChatRequest, source string) (conv, requestID string, err error) {
	ctx, span := telemetry.Start(ctx, "chat send", trace.WithSpanKind(trace.SpanKindProducer))
	defer func() { telemetry.End(span, err) }()
	ev, conv, err := newChatRequest(req, source)
	if err != nil {
		return "", "", err
	}
	span.SetAttributes(telemetry.AttrConversation.String(conv))
	return conv, ev.ID, PublishChatRequest(ctx, js, names, ev)
}

// NewChatRequest builds the io.agentmesh.chat.requested event of a turn and
// returns it with its conversation id (a new conversation is named by the
// event id), so a client can follow the conversation before publishing.
func NewChatRequest(conversationID, message, source string) (bus.Event, string, error) {
	return newChatRequest(schemas.ChatRequest{ConversationID: conversationID, Message: message}, source)
}

// WithRewind makes the turn the first of a new conversation that starts
// as conversation conv was before its turn turn (from 1; see
// schemas.ChatRequest.Rewind): Turn's conversation must be new (or "",
// one named by the request).
func WithRewind(conv string, turn int) TurnOption {
	return func(o *turnOptions) { o.rewind = &schemas.ChatRewind{ConversationID: conv, Turn: turn} }
}

func newChatRequest(req schemas.ChatRequest, source string) (bus.Event, string, error) {
	conversationID, message := req.ConversationID, req.Message
	if conversationID != "" {
		if err := bus.ValidateToken("conversation id", conversationID); err != nil {
			return bus.Event{}, "", err
		}
	}
	if strings.TrimSpace(message) == "" {
		return bus.Event{}, "", ErrEmptyMessage
	}
	if source == "" {
		source = "agentmesh/chat"
	}
	if r := req.Rewind; r != nil {
		if err := bus.ValidateToken("conversation id", r.ConversationID); err != nil {
			return bus.Event{}, "", fmt.Errorf("rewind: %w", err)
		}
		if r.Turn < 1 {
			return bus.Event{}, "", fmt.Errorf("rewind: turn %d of conversation %s: turns count from 1", r.Turn, r.ConversationID)
		}
	}
	ev, err := bus.NewEvent(bus.TypeChatRequested, source, req)
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
// stored once. An ev without a traceparent gets ctx's span's, when ctx has
// one.
func PublishChatRequest(ctx context.Context, js jetstream.JetStream, names bus.Names, ev bus.Event) error {
	SetTraceParent(ctx, &ev)
	msg, err := bus.Encode(names.ChatRequest(), ev)
	if err != nil {
		return err
	}
	msg.Header.Set(jetstream.MsgIDHeader, ev.ID)
	if _, err := bus.Publish(ctx, js, msg); err != nil {
		if errors.Is(err, ErrBacklogFull) {
			return fmt.Errorf("chat: the request was not sent: %w", err)
		}
		return fmt.Errorf("chat: publishing the request on %s: %w (is NATS with JetStream running and provisioned?)", names.ChatRequest(), err)
	}
	return nil
}

// Turn sends one chat turn of conversation (a new conversation when
// empty) and waits for its answer: progress, when not nil, is called with
// each io.agentmesh.chat.progress message of the turn, and accepted, when
// not nil, with the conversation id once the request is stored. It follows only what
// comes after the request, so earlier turns' answers are not mistaken for
// this one's. The response carries the conversation id even on error.
// The turn is a client span "chat" (the trace of the whole turn hangs
// under it), ended when the answer comes. Options: WithDeltas.
func Turn(ctx context.Context, js jetstream.JetStream, names bus.Names, conversation, message, source string, progress func(schemas.TaskProgress), accepted func(conv string), opts ...TurnOption) (resp schemas.ChatResponse, answer bus.Event, err error) {
	var o turnOptions
	for _, opt := range opts {
		opt(&o)
	}
	ctx, span := telemetry.Start(ctx, "chat", trace.WithSpanKind(trace.SpanKindClient))
	defer func() {
		span.SetAttributes(telemetry.AttrConversation.String(resp.ConversationID), telemetry.AttrStatus.String(resp.State))
		telemetry.End(span, err)
	}()
	ev, conv, err := newChatRequest(schemas.ChatRequest{ConversationID: conversation, Message: message, Rewind: o.rewind}, source)
	if err != nil {
		return schemas.ChatResponse{}, bus.Event{}, err
	}
	resp = schemas.ChatResponse{ConversationID: conv}
	// Every event of the conversation, owned or not (admin may go on with a
	// client's conversation, whose answers are on the owner's subjects).
	events, stop, err := Follow(ctx, js, names, names.EventsOf(conv), true)
	if err != nil {
		return resp, bus.Event{}, fmt.Errorf("following conversation %s: %w", conv, err)
	}
	defer stop()
	// A channel subscription: the connection's reader puts each piece in
	// it as it reads it, so the pieces written before the answer are in it
	// when the answer (read later on the same connection) comes.
	var deltas chan *nats.Msg // nil, and so never ready, without WithDeltas
	order := deltaOrder{fn: o.deltas}
	if o.deltas != nil {
		deltas = make(chan *nats.Msg, 1024)
		for _, subject := range names.DeltasOf(conv) { // owned or not; a client's own
			sub, err := js.Conn().ChanSubscribe(subject, deltas)
			if err != nil {
				return resp, bus.Event{}, fmt.Errorf("following the text of conversation %s: %w", conv, err)
			}
			defer func() { _ = sub.Unsubscribe() }()
		}
	}
	if err := PublishChatRequest(ctx, js, names, ev); err != nil {
		return resp, bus.Event{}, err
	}
	if accepted != nil {
		accepted(conv)
	}
	for {
		select {
		case <-ctx.Done():
			return resp, bus.Event{}, fmt.Errorf("conversation %s: no answer: %w", conv, ctx.Err())
		case m := <-deltas:
			order.piece(m)
		case e := <-events:
			switch e.Type {
			case bus.TypeChatProgress:
				var p schemas.TaskProgress
				if e.DataAs(&p) == nil {
					if progress != nil {
						progress(p)
					}
					order.noted(p)
				}
			case bus.TypeChatResponded:
				for drained := false; !drained; { // pieces that came in before the answer
					select {
					case m := <-deltas:
						order.piece(m)
					default:
						drained = true
					}
				}
				order.flush()
				if err := e.DataAs(&resp); err != nil {
					return resp, e, fmt.Errorf("conversation %s: the answer does not decode: %w", conv, err)
				}
				return resp, e, nil
			}
		}
	}
}

// CheckConversation returns an error wrapping ErrUnknownConversation when
// the conversations bucket holds no conversation id (neither its state nor
// a turn in progress), so a mistyped id is not taken as a new conversation.
func CheckConversation(ctx context.Context, conversations jetstream.KeyValue, id string) error {
	if err := bus.ValidateToken("conversation id", id); err != nil {
		return err
	}
	for _, key := range []string{id, id + ".chat"} {
		_, err := conversations.Get(ctx, key)
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted) {
			return fmt.Errorf("looking up conversation %q: %w", id, err)
		}
	}
	return fmt.Errorf("%w: %q is not in %s", ErrUnknownConversation, id, conversations.Bucket())
}
