package client

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/schemas"
)

// The mesh's own dispatcher, registry and followers (package
// internal/meshcore, which agents and the orchestrator use too), for
// programs outside the mesh.
type (
	// Dispatcher sends tasks to agents and awaits their results.
	Dispatcher = meshcore.Dispatcher
	// DispatchMeta is what a dispatched task carries besides the request.
	DispatchMeta = meshcore.DispatchMeta
	// Result is an awaited task's result.
	Result = meshcore.Result
	// UndecodableResultError is a result of an awaited task that did not
	// decode.
	UndecodableResultError = meshcore.UndecodableResultError
	// Registry is a live view of the agents on the mesh.
	Registry = meshcore.Registry
	// AgentInfo is one agent of the registry: its contract and instances.
	AgentInfo = meshcore.AgentInfo
	// Refusal is an announcement the registry left out, and why.
	Refusal = meshcore.Refusal
	// RegistryOption configures NewRegistry.
	RegistryOption = meshcore.RegistryOption
)

// NewDispatcher returns a dispatcher that publishes on js as source.
func NewDispatcher(js jetstream.JetStream, names bus.Names, source string) *Dispatcher {
	return meshcore.NewDispatcher(js, names, source)
}

// NewRegistry opens a live view of the agents KV bucket (see
// meshcore.NewRegistry).
func NewRegistry(ctx context.Context, kv jetstream.KeyValue, opts ...RegistryOption) (*Registry, error) {
	return meshcore.NewRegistry(ctx, kv, opts...)
}

// OnRefused calls fn with each announcement the registry leaves out.
func OnRefused(fn func(Refusal)) RegistryOption { return meshcore.OnRefused(fn) }

// Follow delivers the events stored on subject in order (see
// meshcore.Follow).
func Follow(ctx context.Context, js jetstream.JetStream, names bus.Names, subject string, fromNow bool) (events <-chan bus.Event, stop func(), err error) {
	return meshcore.Follow(ctx, js, names, subject, fromNow)
}

// LastEvent returns the last event stored on subject (see
// meshcore.LastEvent).
func LastEvent(ctx context.Context, js jetstream.JetStream, names bus.Names, subject string) (bus.Event, error) {
	return meshcore.LastEvent(ctx, js, names, subject)
}

// FollowDeltas calls fn with each piece of text the chat loop's model
// writes for conversation conv (see meshcore.FollowDeltas).
func FollowDeltas(nc *nats.Conn, names bus.Names, conv string, fn func(schemas.ChatDelta)) (stop func(), err error) {
	return meshcore.FollowDeltas(nc, names, conv, fn)
}

// SetTraceParent puts the W3C trace context of ctx (or a new one) on ev.
func SetTraceParent(ctx context.Context, ev *bus.Event) { meshcore.SetTraceParent(ctx, ev) }

// NewTraceParent returns a new W3C traceparent.
func NewTraceParent() string { return meshcore.NewTraceParent() }
