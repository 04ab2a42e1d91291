package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// taskRunner is one endpoint (an agent or the chat): it starts tasks for
// messages and owns the tasks it started.
type taskRunner interface {
	start(ctx context.Context, msg *Message) (*taskEntry, error)
	owns(e *taskEntry) bool
}

func (r agentRunner) owns(e *taskEntry) bool { return e.kind == kindAgent && e.agent == r.agent }
func (r chatRunner) owns(e *taskEntry) bool  { return e.kind == kindChat }

// The methods beyond the four of the core flow.
const (
	MethodListTasks       = "ListTasks"
	MethodSubscribeToTask = "SubscribeToTask"
)

var methods = []string{MethodSendMessage, MethodSendStreamingMessage, MethodGetTask, MethodListTasks, MethodCancelTask, MethodSubscribeToTask}

// serveRPC decodes one JSON-RPC request and answers it: with one JSON
// response, or an SSE stream of them for the streaming methods.
func (h *Handler) serveRPC(w http.ResponseWriter, r *http.Request, run taskRunner) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeRPC(w, nullID, nil, newRPCError(CodeInvalidRequest, fmt.Sprintf("reading the request: %v (at most %d MiB)", err, maxBody>>20)))
		return
	}
	req, rerr := DecodeRequest(body)
	if rerr != nil {
		writeRPC(w, req.ID, nil, rerr)
		return
	}
	v := r.Header.Get(HeaderVersion)
	legacy := isLegacy(v)
	switch {
	case legacy:
		if req, err = fromLegacy(req); err != nil {
			writeRPC(w, req.ID, nil, rpcErrorOf(err))
			return
		}
	case v != ProtocolVersion:
		writeRPC(w, req.ID, nil, newRPCError(CodeVersionNotSupported, fmt.Sprintf("A2A version %q is not supported: send %s: %s (or %s)", clip(v), HeaderVersion, ProtocolVersion, LegacyVersion)))
		return
	}
	enc := func(sr StreamResponse, _ bool) any { return sr }
	if legacy {
		enc = legacyEvent
	}
	ctx := r.Context()
	var res any
	switch req.Method {
	case MethodSendMessage:
		res, err = h.sendMessage(ctx, req, run)
	case MethodSendStreamingMessage:
		h.sendStreaming(w, r, req, run, enc)
		return
	case MethodSubscribeToTask:
		h.subscribe(w, r, req, run, enc)
		return
	case MethodGetTask:
		res, err = h.getTask(req, run)
	case MethodListTasks:
		res, err = h.listTasks(req, run)
	case MethodCancelTask:
		res, err = h.cancelTask(ctx, req, run)
	case "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig":
		writeRPC(w, req.ID, nil, newRPCError(CodePushNotSupported, fmt.Sprintf("%s: push notifications are not offered (the card says pushNotifications: false): stream with %s or poll with %s", req.Method, MethodSendStreamingMessage, MethodGetTask)))
		return
	case "GetExtendedAgentCard":
		writeRPC(w, req.ID, nil, newRPCError(CodeExtendedCard, "there is no extended agent card (the card says extendedAgentCard: false): the public card is all there is"))
		return
	default:
		writeRPC(w, req.ID, nil, newRPCError(CodeMethodNotFound, fmt.Sprintf("method %q is not served here: use one of %v (A2A %s)", clip(req.Method), methods, ProtocolVersion)))
		return
	}
	if err != nil {
		writeRPC(w, req.ID, nil, rpcErrorOf(err))
		return
	}
	if legacy {
		res = toLegacy(res)
	}
	writeRPC(w, req.ID, res, nil)
}

// encoder writes a stream event in the request's version; last marks the
// event after which the stream ends.
type encoder func(sr StreamResponse, last bool) any

// decodeSend reads SendMessage params and checks the message.
func decodeSend(req Request) (SendMessageRequest, error) {
	var p SendMessageRequest
	if err := decodeParams(req, &p); err != nil {
		return p, err
	}
	if p.Message == nil {
		return p, fmt.Errorf("%w: params.message is missing", ErrInvalidParams)
	}
	if p.Message.MessageID == "" {
		return p, fmt.Errorf("%w: message.messageId is empty: the sender names each message", ErrInvalidParams)
	}
	if p.Message.Role != RoleUser {
		return p, fmt.Errorf("%w: message.role is %q: a client sends %s", ErrInvalidParams, p.Message.Role, RoleUser)
	}
	if len(p.Message.Parts) == 0 {
		return p, fmt.Errorf("%w: the message has no parts", ErrInvalidParams)
	}
	return p, nil
}

// sendMessage starts a task and, unless returnImmediately is set, waits
// until it ends or waits for input.
func (h *Handler) sendMessage(ctx context.Context, req Request, run taskRunner) (SendMessageResponse, error) {
	p, err := decodeSend(req)
	if err != nil {
		return SendMessageResponse{}, err
	}
	e, err := run.start(ctx, p.Message)
	if err != nil {
		return SendMessageResponse{}, err
	}
	var hl *int
	if p.Configuration != nil {
		hl = p.Configuration.HistoryLength
		if p.Configuration.ReturnImmediately {
			t := e.snapshot(hl)
			return SendMessageResponse{Task: &t}, nil
		}
	}
	e.wait(ctx)
	t := e.snapshot(hl)
	return SendMessageResponse{Task: &t}, nil
}

// sendStreaming starts a task and streams it.
func (h *Handler) sendStreaming(w http.ResponseWriter, r *http.Request, req Request, run taskRunner, enc encoder) {
	p, err := decodeSend(req)
	if err != nil {
		writeRPC(w, req.ID, nil, rpcErrorOf(err))
		return
	}
	e, err := run.start(r.Context(), p.Message)
	if err != nil {
		writeRPC(w, req.ID, nil, rpcErrorOf(err))
		return
	}
	first, from := e.sinceBegun()
	streamTask(w, r, req.ID, e, first, from, enc)
}

// subscribe streams a task that has not ended, from its current state on.
func (h *Handler) subscribe(w http.ResponseWriter, r *http.Request, req Request, run taskRunner, enc encoder) {
	var p struct {
		ID string `json:"id"`
	}
	if err := decodeParams(req, &p); err != nil {
		writeRPC(w, req.ID, nil, rpcErrorOf(err))
		return
	}
	e, err := h.lookup(p.ID, run)
	if err == nil && e.state().Terminal() {
		err = fmt.Errorf("%w: task %q has ended (%s): %s returns it", ErrUnsupported, p.ID, e.state(), MethodGetTask)
	}
	if err != nil {
		writeRPC(w, req.ID, nil, rpcErrorOf(err))
		return
	}
	first, from := e.start()
	streamTask(w, r, req.ID, e, first, from, enc)
}

// streamTask writes server-sent events, each a JSON-RPC response with id:
// the task first (as it was after from changes), then each status and
// artifact update from there, until it settles or the client goes away.
func streamTask(w http.ResponseWriter, r *http.Request, id json.RawMessage, e *taskEntry, first Task, from int, enc encoder) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(sr StreamResponse, last bool) bool {
		b, err := json.Marshal(Response{JSONRPC: "2.0", ID: id, Result: enc(sr, last)})
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	done := first.Status.State.Terminal()
	if !send(StreamResponse{Task: &first}, done) || done {
		return
	}
	for {
		evs, settled, ch := e.next(from)
		for i, ev := range evs {
			if !send(ev, settled && i == len(evs)-1) {
				return
			}
		}
		from += len(evs)
		if settled {
			return // everything up to the settling change is sent
		}
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		}
	}
}

// lookup finds a task of the endpoint run.
func (h *Handler) lookup(id string, run taskRunner) (*taskEntry, error) {
	e, ok := h.tasks.get(id)
	if !ok || !run.owns(e) {
		return nil, fmt.Errorf("%w: no task %q at this endpoint (a task is kept by the bridge that started it, the last %d)", ErrTaskNotFound, id, h.maxTasks)
	}
	return e, nil
}

func (h *Handler) getTask(req Request, run taskRunner) (Task, error) {
	var p GetTaskRequest
	if err := decodeParams(req, &p); err != nil {
		return Task{}, err
	}
	e, err := h.lookup(p.ID, run)
	if err != nil {
		return Task{}, err
	}
	return e.snapshot(p.HistoryLength), nil
}
