// Package stateview is the read-only view of the runs and conversations the
// orchestrator keeps in KV, for the readers of state outside it (the
// gateway, the bridges, the CLI): they read through a View and cannot write. The
// orchestrator owns the state (package orchestrator/state); the types here
// are its.
package stateview

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// The state a View returns.
type (
	// RunState is a run assembled from its keys.
	RunState = state.RunState
	// RunHeader is a run's header: its status and counts.
	RunHeader = state.RunHeader
	// StepState is the progress of one step of a run.
	StepState = state.StepState
	// RunSummary is one run of a listing.
	RunSummary = state.RunSummary
	// ConversationSummary is one conversation of a listing.
	ConversationSummary = state.ConversationSummary
)

// ConversationRunning is a ConversationSummary's State while its latest
// turn runs.
const ConversationRunning = state.ConversationRunning

// ErrNotFound reports a run or conversation the buckets do not hold.
var ErrNotFound = state.ErrNotFound

// View reads runs and conversations; it has no method that writes.
type View struct{ s *state.Store }

// New returns a view of the conversations and runs buckets.
func New(conversations, runs jetstream.KeyValue) *View {
	return &View{s: state.New(conversations, runs)}
}

// Run loads a run, assembled from its keys. A missing one wraps ErrNotFound.
func (v *View) Run(ctx context.Context, id string) (*RunState, error) { return v.s.Run(ctx, id) }

// Header reads a run's header and its revision.
func (v *View) Header(ctx context.Context, runID string) (*RunHeader, uint64, error) {
	return v.s.Header(ctx, runID)
}

// Conversation loads a conversation with its history assembled from its
// newest turns. A missing one wraps ErrNotFound.
func (v *View) Conversation(ctx context.Context, id string) (*schemas.ConversationState, error) {
	return v.s.Conversation(ctx, id)
}

// StepRecord reads the record of a step's end; ErrNotFound while it runs.
func (v *View) StepRecord(ctx context.Context, runID, stepID string) (*StepState, error) {
	return v.s.StepRecord(ctx, runID, stepID)
}

// ConversationState loads a conversation's stored state alone: slots and
// turn count, no history. A missing one wraps ErrNotFound.
func (v *View) ConversationState(ctx context.Context, id string) (*schemas.ConversationState, error) {
	return v.s.ConversationState(ctx, id)
}

// RecentRuns returns the runs most recently written first, at most limit
// of them (all when limit <= 0), and how many runs the bucket holds.
func (v *View) RecentRuns(ctx context.Context, limit int) ([]RunSummary, int, error) {
	return v.s.RecentRuns(ctx, limit)
}

// RecentConversations returns the conversations most recently written
// first, at most limit of them (all when limit <= 0), and how many the
// bucket holds.
func (v *View) RecentConversations(ctx context.Context, limit int) ([]ConversationSummary, int, error) {
	return v.s.RecentConversations(ctx, limit)
}
