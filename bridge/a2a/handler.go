package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/resolvers"
)

// The URL layout the handler serves (docs/bridges.md):
//
//	GET  /.well-known/agent-card.json                    the chat's card
//	GET  /a2a/chat/.well-known/agent-card.json           the chat's card
//	POST /a2a/chat                                       the chat's JSON-RPC endpoint
//	GET  /a2a/agents                                     every live agent's card
//	GET  /a2a/agents/{agent}/.well-known/agent-card.json one agent's card
//	POST /a2a/agents/{agent}                             its JSON-RPC endpoint
const (
	PathChat   = "/a2a/chat"
	PathAgents = "/a2a/agents"
)

// maxBody bounds a JSON-RPC request (file parts travel inside it).
const maxBody = 32 << 20

// Handler serves the mesh over A2A. It is an http.Handler for the paths
// above: mount it at "/" (or on "/.well-known/agent-card.json" and
// "/a2a/") next to other routes. It checks no credentials: put it behind
// the gateway's authentication, or serve it where only trusted clients
// reach it. Close stops what it started.
type Handler struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	names    bus.Names
	registry *client.Registry
	ownReg   bool
	disp     *client.Dispatcher
	files    FileStore
	baseURL  string
	chatName string
	maxTasks int
	log      *slog.Logger

	tasks  *taskStore
	mux    *http.ServeMux
	ctx    context.Context // ends at Close: the tasks' goroutines stop
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// NewHandler returns a handler serving A2A agent cards and JSON-RPC
// endpoints for the mesh reached through nc, which must be provisioned. It
// watches the agents bucket (unless WithRegistry gives a registry) and
// keeps file parts in the object store (unless WithFiles says otherwise).
// Options: WithNames, WithRegistry, WithFiles, WithBaseURL, WithChatName,
// WithMaxTasks, WithLogger.
func NewHandler(ctx context.Context, nc *nats.Conn, opts ...Option) (*Handler, error) {
	h := &Handler{nc: nc, names: bus.MustNames(bus.DefaultPrefix), chatName: "agentmesh", maxTasks: 10000, log: slog.Default()}
	for _, o := range opts {
		o(h)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("a2a: jetstream: %w", err)
	}
	h.js = js
	if h.registry == nil {
		kv, err := js.KeyValue(ctx, h.names.AgentsBucket())
		if err != nil {
			return nil, fmt.Errorf("a2a: the agents bucket %s: %w (is the mesh provisioned?)", h.names.AgentsBucket(), err)
		}
		if h.registry, err = client.NewRegistry(ctx, kv); err != nil {
			return nil, err
		}
		h.ownReg = true
	}
	if h.files == nil {
		if obs, err := js.ObjectStore(ctx, h.names.FilesStore()); err == nil {
			h.files = resolvers.NewObjectStore(obs)
		} else {
			h.log.Warn("a2a: no object store: file parts will be refused", "store", h.names.FilesStore(), "err", err)
		}
	}
	h.disp = client.NewDispatcher(js, h.names, "agentmesh/a2a")
	h.tasks = newTaskStore(h.maxTasks)
	h.ctx, h.cancel = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", h.serveChatCard)
	mux.HandleFunc("GET "+PathChat+"/.well-known/agent-card.json", h.serveChatCard)
	mux.HandleFunc("POST "+PathChat, h.serveChat)
	mux.HandleFunc("POST "+PathChat+"/", h.serveChat)
	mux.HandleFunc("GET "+PathAgents, h.serveAgentList)
	mux.HandleFunc("GET "+PathAgents+"/{agent}/.well-known/agent-card.json", h.serveAgentCard)
	mux.HandleFunc("POST "+PathAgents+"/{agent}", h.serveAgent)
	mux.HandleFunc("POST "+PathAgents+"/{agent}/", h.serveAgent)
	h.mux = mux
	return h, nil
}

// ServeHTTP serves the paths above; others are 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Close stops following the running tasks and the registry this handler
// started. It is safe to call more than once.
func (h *Handler) Close() {
	h.once.Do(func() {
		h.cancel()
		h.wg.Wait()
		if h.ownReg {
			h.registry.Stop()
		}
	})
}

// base is the absolute URL the endpoints of r's cards are under.
func (h *Handler) base(r *http.Request) string {
	if h.baseURL != "" {
		return strings.TrimSuffix(h.baseURL, "/")
	}
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	host := r.Host
	if fh := r.Header.Get("X-Forwarded-Host"); fh != "" {
		host = fh
	}
	return scheme + "://" + host
}

func (h *Handler) serveChatCard(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, ChatCard(h.chatName, h.base(r)+PathChat, h.registry.Agents()))
}

func (h *Handler) serveAgentCard(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("agent")
	info, ok := h.registry.Lookup(name)
	if !ok {
		h.noAgent(w, name)
		return
	}
	writeJSON(w, http.StatusOK, CardFor(info.Contract, h.base(r)+PathAgents+"/"+name))
}

func (h *Handler) serveAgentList(w http.ResponseWriter, r *http.Request) {
	cards := []AgentCard{}
	for _, a := range h.registry.Agents() {
		cards = append(cards, CardFor(a.Contract, h.base(r)+PathAgents+"/"+a.Contract.Name))
	}
	writeJSON(w, http.StatusOK, cards)
}

func (h *Handler) noAgent(w http.ResponseWriter, name string) {
	var live []string
	for _, a := range h.registry.Agents() {
		live = append(live, a.Contract.Name)
	}
	http.Error(w, fmt.Sprintf("no agent %q is live on the mesh (live: %s); GET %s lists their cards", name, strings.Join(live, ", "), PathAgents), http.StatusNotFound)
}

func (h *Handler) serveAgent(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("agent")
	if _, ok := h.registry.Lookup(name); !ok {
		h.noAgent(w, name)
		return
	}
	h.serveRPC(w, r, func() taskRunner { return agentRunner{h: h, agent: name} })
}

func (h *Handler) serveChat(w http.ResponseWriter, r *http.Request) {
	h.serveRPC(w, r, func() taskRunner { return chatRunner{h: h} })
}

// taskRunner starts a task of one endpoint (an agent or the chat) for a
// message.
type taskRunner interface {
	start(ctx context.Context, msg *Message) (*taskEntry, error)
}

// serveRPC decodes one JSON-RPC request and answers it: with one JSON
// response, or an SSE stream of them for SendStreamingMessage.
func (h *Handler) serveRPC(w http.ResponseWriter, r *http.Request, runner func() taskRunner) {
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
	if v := r.Header.Get(HeaderVersion); v != ProtocolVersion {
		if v == "" {
			v = "0.3 (no " + HeaderVersion + " header)"
		}
		writeRPC(w, req.ID, nil, newRPCError(CodeVersionNotSupported, fmt.Sprintf("A2A version %s is not supported: send %s: %s", v, HeaderVersion, ProtocolVersion)))
		return
	}
	ctx := r.Context()
	switch req.Method {
	case MethodSendMessage:
		res, err := h.sendMessage(ctx, req, runner())
		writeRPC(w, req.ID, res, errOrNil(err))
	case MethodSendStreamingMessage:
		h.sendStreaming(w, r, req, runner())
	case MethodGetTask:
		res, err := h.getTask(req)
		writeRPC(w, req.ID, res, errOrNil(err))
	case MethodCancelTask:
		res, err := h.cancelTask(ctx, req)
		writeRPC(w, req.ID, res, errOrNil(err))
	default:
		writeRPC(w, req.ID, nil, newRPCError(CodeMethodNotFound, fmt.Sprintf("method %q is not served here: use %s, %s, %s or %s (A2A %s)",
			clip(req.Method), MethodSendMessage, MethodSendStreamingMessage, MethodGetTask, MethodCancelTask, ProtocolVersion)))
	}
}

func errOrNil(err error) *RPCError {
	if err == nil {
		return nil
	}
	return rpcErrorOf(err)
}

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

// sendStreaming starts a task and streams it as server-sent events: the
// task first, then each status and artifact update, until it settles.
func (h *Handler) sendStreaming(w http.ResponseWriter, r *http.Request, req Request, run taskRunner) {
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
	from := e.mark()
	first := e.snapshot(nil)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(sr StreamResponse) bool {
		b, err := json.Marshal(Response{JSONRPC: "2.0", ID: req.ID, Result: sr})
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
	if !send(StreamResponse{Task: &first}) {
		return
	}
	for {
		evs, settled, ch := e.next(from)
		for _, ev := range evs {
			if !send(ev) {
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

func (h *Handler) getTask(req Request) (Task, error) {
	var p GetTaskRequest
	if err := decodeParams(req, &p); err != nil {
		return Task{}, err
	}
	e, ok := h.tasks.get(p.ID)
	if !ok {
		return Task{}, fmt.Errorf("%w: no task %q here (tasks are kept by the bridge that started them, the last %d)", ErrTaskNotFound, p.ID, h.maxTasks)
	}
	return e.snapshot(p.HistoryLength), nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// writeRPC answers with a JSON-RPC response: HTTP 200 whatever the
// outcome, as the JSON-RPC binding asks.
func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, rerr *RPCError) {
	resp := Response{JSONRPC: "2.0", ID: id}
	if rerr != nil {
		resp.Error = rerr
	} else {
		resp.Result = result
	}
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(Response{JSONRPC: "2.0", ID: id, Error: newRPCError(CodeInternal, err.Error())})
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

var errClosed = errors.New("a2a: the bridge is closing")
