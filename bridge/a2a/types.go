package a2a

import (
	"encoding/json"
	"fmt"
)

// ProtocolVersion is the A2A version this package speaks (the version
// @a2a-js/sdk 1.x implements); requests carry it in the A2A-Version header.
const ProtocolVersion = "1.0"

// Header names and the JSON-RPC binding's name in agent cards.
const (
	HeaderVersion  = "A2A-Version"
	BindingJSONRPC = "JSONRPC"
	// WellKnownCard is the card's path below an agent's base URL.
	WellKnownCard = ".well-known/agent-card.json"
)

// TaskState is a task's lifecycle state, spelled as the protocol's enum.
type TaskState string

// The task states. Completed, failed, canceled and rejected are terminal;
// input-required and auth-required are interrupted.
const (
	StateSubmitted     TaskState = "TASK_STATE_SUBMITTED"
	StateWorking       TaskState = "TASK_STATE_WORKING"
	StateCompleted     TaskState = "TASK_STATE_COMPLETED"
	StateFailed        TaskState = "TASK_STATE_FAILED"
	StateCanceled      TaskState = "TASK_STATE_CANCELED"
	StateInputRequired TaskState = "TASK_STATE_INPUT_REQUIRED"
	StateRejected      TaskState = "TASK_STATE_REJECTED"
	StateAuthRequired  TaskState = "TASK_STATE_AUTH_REQUIRED"
)

// Terminal reports whether no further change can follow s.
func (s TaskState) Terminal() bool {
	return s == StateCompleted || s == StateFailed || s == StateCanceled || s == StateRejected
}

// Interrupted reports whether s waits for the client (input or auth).
func (s TaskState) Interrupted() bool { return s == StateInputRequired || s == StateAuthRequired }

// Role is a message's sender.
type Role string

// The roles.
const (
	RoleUser  Role = "ROLE_USER"
	RoleAgent Role = "ROLE_AGENT"
)

// AgentCard describes an agent: who it is, where and how to call it, and
// its skills.
type AgentCard struct {
	Name                string            `json:"name"`
	Description         string            `json:"description"`
	SupportedInterfaces []AgentInterface  `json:"supportedInterfaces"`
	Provider            *AgentProvider    `json:"provider,omitempty"`
	Version             string            `json:"version"`
	DocumentationURL    string            `json:"documentationUrl,omitempty"`
	Capabilities        AgentCapabilities `json:"capabilities"`
	DefaultInputModes   []string          `json:"defaultInputModes"`
	DefaultOutputModes  []string          `json:"defaultOutputModes"`
	Skills              []AgentSkill      `json:"skills"`
}

// AgentInterface is one URL, binding and protocol version of an agent.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
	Tenant          string `json:"tenant,omitempty"`
}

// AgentProvider names who runs an agent.
type AgentProvider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

// AgentCapabilities lists the optional protocol features an agent offers.
type AgentCapabilities struct {
	Streaming         bool `json:"streaming"`
	PushNotifications bool `json:"pushNotifications"`
	ExtendedAgentCard bool `json:"extendedAgentCard"`
}

// AgentSkill is one thing an agent can do.
type AgentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}

// Part is one piece of a message or artifact: exactly one of Text, Raw
// (file bytes, base64 in JSON), URL (a file by reference) or Data (any JSON
// value).
type Part struct {
	Text      *string         `json:"text,omitempty"`
	Raw       Bytes           `json:"raw,omitempty"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Text: &s, MediaType: "text/plain"} }

// kind names the content of p, or returns an error when p has none or more
// than one.
func (p Part) kind() (string, error) {
	var kinds []string
	if p.Text != nil {
		kinds = append(kinds, "text")
	}
	if p.Raw != nil {
		kinds = append(kinds, "raw")
	}
	if p.URL != "" {
		kinds = append(kinds, "url")
	}
	if p.Data != nil {
		kinds = append(kinds, "data")
	}
	if len(kinds) != 1 {
		return "", fmt.Errorf("a part holds exactly one of text, raw, url or data; this one holds %v", kinds)
	}
	return kinds[0], nil
}

// Message is one unit of communication between a client and an agent.
type Message struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             Role           `json:"role"`
	Parts            []Part         `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

// TaskStatus is a task's state with an optional message and its time.
type TaskStatus struct {
	State     TaskState `json:"state"`
	Message   *Message  `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

// Artifact is one output of a task.
type Artifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []Part         `json:"parts"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// Task is the unit of work: its status, outputs and message history.
type Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskStatusUpdateEvent tells a streaming client a task's new status.
type TaskStatusUpdateEvent struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskArtifactUpdateEvent tells a streaming client about an output.
type TaskArtifactUpdateEvent struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	Append    bool     `json:"append,omitempty"`
	LastChunk bool     `json:"lastChunk,omitempty"`
}

// SendMessageConfiguration tunes a SendMessage call.
type SendMessageConfiguration struct {
	AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
	HistoryLength       *int     `json:"historyLength,omitempty"`
	ReturnImmediately   bool     `json:"returnImmediately,omitempty"`
}

// SendMessageRequest is the params of SendMessage and SendStreamingMessage.
type SendMessageRequest struct {
	Tenant        string                    `json:"tenant,omitempty"`
	Message       *Message                  `json:"message"`
	Configuration *SendMessageConfiguration `json:"configuration,omitempty"`
	Metadata      map[string]any            `json:"metadata,omitempty"`
}

// GetTaskRequest is the params of GetTask.
type GetTaskRequest struct {
	Tenant        string `json:"tenant,omitempty"`
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength,omitempty"`
}

// CancelTaskRequest is the params of CancelTask.
type CancelTaskRequest struct {
	Tenant   string         `json:"tenant,omitempty"`
	ID       string         `json:"id"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// SendMessageResponse is SendMessage's result: a task or a message.
type SendMessageResponse struct {
	Task    *Task    `json:"task,omitempty"`
	Message *Message `json:"message,omitempty"`
}

// StreamResponse is one event of a stream: exactly one field is set.
type StreamResponse struct {
	Task           *Task                    `json:"task,omitempty"`
	Message        *Message                 `json:"message,omitempty"`
	StatusUpdate   *TaskStatusUpdateEvent   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *TaskArtifactUpdateEvent `json:"artifactUpdate,omitempty"`
}
