package a2a

import (
	"log/slog"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
)

// Option configures a Handler.
type Option func(*Handler)

// WithNames sets the mesh's subject names (default prefix "mesh").
func WithNames(n bus.Names) Option { return func(h *Handler) { h.names = n } }

// WithRegistry uses a live registry the caller already has (and stops)
// instead of watching the agents bucket anew.
func WithRegistry(r *client.Registry) Option { return func(h *Handler) { h.registry = r } }

// WithFiles keeps the bytes of file parts in fs (default: the mesh's
// object store).
func WithFiles(fs FileStore) Option { return func(h *Handler) { h.files = fs } }

// WithBaseURL sets the absolute URL the cards name endpoints under, such
// as "https://mesh.example.com" (default: the scheme and Host of each
// card request).
func WithBaseURL(u string) Option { return func(h *Handler) { h.baseURL = u } }

// WithChatName names the chat's card (default "agentmesh").
func WithChatName(name string) Option { return func(h *Handler) { h.chatName = name } }

// WithMaxTasks bounds the tasks kept for GetTask (default 10000); the
// oldest settled ones go first.
func WithMaxTasks(n int) Option { return func(h *Handler) { h.maxTasks = n } }

// WithLogger logs with l (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// WithClient names the client identity the handler runs as on a secure
// mesh: its tasks' results then go to mesh.result.<agent>.client.<name>.<task>,
// and its requests, events and text are that client's (bus.Names.ForClient),
// the subjects a client may read (docs/security.md).
func WithClient(name string) Option { return func(h *Handler) { h.client = name } }
