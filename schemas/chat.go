package schemas

// Chat turn end states.
const (
	ChatCompleted        = "completed"
	ChatStepLimitReached = "step_limit_reached"
	ChatFailed           = "failed"
	// ChatInputRequired: the turn asks the user a question (A2A's
	// input-required); the conversation's next message answers it and
	// continues the turn's work.
	ChatInputRequired = "input_required"
)

// ChatRequest is the data of io.agentmesh.chat.requested. Without a
// conversation ID, the event's id names a new conversation.
type ChatRequest struct {
	ConversationID string `json:"conversation_id,omitempty"`
	Message        string `json:"message"`
	// Rewind starts the request's conversation, which must be new, as
	// conversation Rewind.ConversationID was before its turn Rewind.Turn
	// (agentmesh chat --rewind): the earlier turns are copied, and the
	// message is the new conversation's next turn.
	Rewind *ChatRewind `json:"rewind,omitempty"`
}

// ChatRewind names a conversation and one of its turns (from 1): where a
// rewound conversation starts from, before that turn.
type ChatRewind struct {
	ConversationID string `json:"conversation_id"`
	Turn           int    `json:"turn"`
}

// ChatMessage is one message of a chat turn as the mesh stores it, in the
// mesh's own shape rather than a model vendor's, so a stored conversation
// outlives a change of model client. Role is "user", "assistant", "tool"
// or "system".
type ChatMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content,omitempty"`
	Name       string         `json:"name,omitempty"`         // a tool message: the tool
	ToolCallID string         `json:"tool_call_id,omitempty"` // a tool message: the call it answers
	ToolCalls  []ChatToolCall `json:"tool_calls,omitempty"`   // an assistant message: the calls it makes
}

// ChatDelta is a piece of the text the chat loop's model is writing, sent
// on core NATS (bus.Names.Deltas) while it writes: at most once, never
// stored. Step is the model call of the turn the text belongs to (a step
// that ends in tool calls may write text too) and Seq counts the step's
// deltas from 1, so a reader sees a gap. The turn's answer, in
// io.agentmesh.chat.responded, is whole whatever was lost.
//
// A PromptAgent's model (any agent calling agents.ReportText) writes on the
// same subject of its task's conversation, else run, else task: TaskID and
// Agent name it, Turn and Step are 0, and Seq counts the task's pieces.
type ChatDelta struct {
	ConversationID string `json:"conversation_id"`
	Turn           int    `json:"turn"`
	Step           int    `json:"step"`
	Seq            int    `json:"seq"`
	Text           string `json:"text"`
	RunID          string `json:"run_id,omitempty"`
	TaskID         string `json:"taskid,omitempty"`
	Agent          string `json:"agent,omitempty"`
}

// ChatToolCall is one tool call of an assistant message.
type ChatToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"` // JSON
}

// ToolCallRecord is one agent call made during a chat turn.
type ToolCallRecord struct {
	Agent      string `json:"agent"`
	Arguments  string `json:"arguments,omitempty"`
	TaskID     string `json:"taskid,omitempty"`
	Success    bool   `json:"success"`
	Summary    string `json:"summary,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
	Code       string `json:"code,omitempty"` // a failed call's error code
	Usage             // what the agent reported: tokens, cost, model time; its duration as tool time
}

// ChatResponse is the data of io.agentmesh.chat.responded.
type ChatResponse struct {
	ConversationID string           `json:"conversation_id"`
	Output         string           `json:"output"`
	State          string           `json:"state"`
	Steps          int              `json:"steps"`
	DurationMS     int64            `json:"duration_ms"`
	Planner        string           `json:"planner,omitempty"` // "llm" or "offline"
	ToolCalls      []ToolCallRecord `json:"tool_calls,omitempty"`
	Error          string           `json:"error,omitempty"`
	Code           string           `json:"code,omitempty"` // with State failed: one of the Code constants
	// Question is what a turn that ended input_required asks (also its
	// Output); AskedBy is "" when the model asked, else the agent whose
	// result asked (codes input_required, approval_required).
	Question string `json:"question,omitempty"`
	AskedBy  string `json:"asked_by,omitempty"`
	// Budget is the turn's budget, when the orchestrator sets one
	// (docs/llm.md#budgets): Usage is what it spent of it.
	Budget *Budget `json:"budget,omitempty"`
	// Usage totals the turn: the orchestrator's own model calls and every
	// agent call's tokens, cost, model time and tool time.
	Usage
}
