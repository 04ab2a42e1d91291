package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	client   string // the client identity on a secure mesh, if any
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
// WithMaxTasks, WithClient, WithLogger.
func NewHandler(ctx context.Context, nc *nats.Conn, opts ...Option) (*Handler, error) {
	h := &Handler{nc: nc, names: bus.MustNames(bus.DefaultPrefix), chatName: "agentmesh", maxTasks: 10000, log: slog.Default()}
	for _, o := range opts {
		o(h)
	}
	if h.client != "" {
		// The client's own request, event and text subjects: on a secure
		// mesh it reads only the events of what it owns.
		h.names = h.names.ForClient(h.client)
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
		// A client keeps its files in its own bucket (docs/security.md).
		bucket, opts := h.names.FilesStore(), []resolvers.Option(nil)
		if h.client != "" {
			bucket = h.names.ClientFilesStore(h.client)
			opts = append(opts, resolvers.WithStoreName(bucket))
		}
		if obs, err := js.ObjectStore(ctx, bucket); err == nil {
			h.files = resolvers.NewObjectStore(obs, opts...)
		} else {
			h.log.Warn("a2a: no object store: file parts will be refused", "store", bucket, "err", err)
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
	writeCard(w, r, ChatCard(h.chatName, h.base(r)+PathChat, h.registry.Agents()))
}

// writeCard answers with card, in 0.3 form for a request that asks for
// 0.3 (or names no version, which means 0.3).
func writeCard(w http.ResponseWriter, r *http.Request, card AgentCard) {
	w.Header().Set("Vary", HeaderVersion)
	if isLegacy(r.Header.Get(HeaderVersion)) {
		writeJSON(w, http.StatusOK, legacyCard(card))
		return
	}
	writeJSON(w, http.StatusOK, card)
}

func (h *Handler) serveAgentCard(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("agent")
	info, ok := h.registry.Lookup(name)
	if !ok {
		h.noAgent(w, name)
		return
	}
	writeCard(w, r, CardFor(info.Contract, h.base(r)+PathAgents+"/"+name))
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
	h.serveRPC(w, r, agentRunner{h: h, agent: name})
}

func (h *Handler) serveChat(w http.ResponseWriter, r *http.Request) {
	h.serveRPC(w, r, chatRunner{h: h})
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
