package schemas

import "time"

// HistoryEntry records one thing that happened in a conversation or run: a
// user message, an agent call and its summary, or a value that has no slot
// (FOLDER_RESULT and other unrouted types keep their value here).
type HistoryEntry struct {
	At      time.Time             `json:"at"`
	Kind    string                `json:"kind"` // "user", "assistant", "tool", "result", "note"
	Agent   string                `json:"agent,omitempty"`
	TaskID  string                `json:"taskid,omitempty"`
	Text    string                `json:"text,omitempty"`
	Outputs map[string]TypedValue `json:"outputs,omitempty"`
}

// ConversationState is what the mesh remembers of one conversation: the
// typed slots that agents' outputs were routed into, the history, and the
// task IDs already applied (so a duplicate or late result changes nothing).
type ConversationState struct {
	ID           string                `json:"id"`
	Slots        map[string]TypedValue `json:"slots"`
	History      []HistoryEntry        `json:"history,omitempty"`
	AppliedTasks []string              `json:"applied_tasks,omitempty"`
	Turns        int                   `json:"turns"`
	// RoutedWaves is, in a run's state, how many of the run's waves have
	// their outputs routed into the slots (each wave's once, in spec order).
	RoutedWaves int `json:"routed_waves,omitempty"`
	// InputRequired is the question the last turn ended with (state
	// input_required), waiting for the conversation's next message; the
	// next turn clears it.
	InputRequired string    `json:"input_required,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	// Origin is, for a rewound conversation, the conversation and turn it
	// continues from before (see ChatRequest.Rewind).
	Origin *ChatRewind `json:"origin,omitempty"`
}

// NewConversationState returns an empty state for id.
func NewConversationState(id string) *ConversationState {
	now := time.Now().UTC()
	return &ConversationState{ID: id, Slots: map[string]TypedValue{}, CreatedAt: now, UpdatedAt: now}
}

// Applied reports whether the result of taskID was already routed.
func (s *ConversationState) Applied(taskID string) bool {
	for _, id := range s.AppliedTasks {
		if id == taskID {
			return true
		}
	}
	return false
}
