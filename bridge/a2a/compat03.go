package a2a

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// A2A 0.3, the version before 1.0, is still spoken by many clients: a
// request without an A2A-Version header, or with 0.3, is one. The bridge
// answers it by translating: 0.3 methods and shapes in, 1.0 handling, 0.3
// shapes out. The differences: slash-named methods (message/send, ...),
// a "kind" on every object, parts as {"kind": "text"|"file"|"data"},
// lower-case roles and kebab-case states, the message/send result and the
// stream events unwrapped, and a card with url and preferredTransport.

// LegacyVersion is the older protocol version the bridge also answers.
const LegacyVersion = "0.3"

// The A2A 0.3 methods and their 1.0 counterparts.
var legacyMethods = map[string]string{
	"message/send":      MethodSendMessage,
	"message/stream":    MethodSendStreamingMessage,
	"tasks/get":         MethodGetTask,
	"tasks/cancel":      MethodCancelTask,
	"tasks/resubscribe": MethodSubscribeToTask,
}

// isLegacy reports whether the A2A-Version header v asks for 0.3.
func isLegacy(v string) bool { return v == "" || v == LegacyVersion || v == "0.3.0" }

type part03 struct {
	Kind     string          `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	File     *file03         `json:"file,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
}

type file03 struct {
	Bytes    string `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Name     string `json:"name,omitempty"`
}

type message03 struct {
	Kind             string         `json:"kind"`
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             string         `json:"role"`
	Parts            []part03       `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

type status03 struct {
	State     string     `json:"state"`
	Message   *message03 `json:"message,omitempty"`
	Timestamp string     `json:"timestamp,omitempty"`
}

type artifact03 struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []part03       `json:"parts"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

type task03 struct {
	Kind      string         `json:"kind"`
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    status03       `json:"status"`
	Artifacts []artifact03   `json:"artifacts,omitempty"`
	History   []message03    `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type statusUpdate03 struct {
	Kind      string   `json:"kind"`
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Status    status03 `json:"status"`
	Final     bool     `json:"final"`
}

type artifactUpdate03 struct {
	Kind      string     `json:"kind"`
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Artifact  artifact03 `json:"artifact"`
	Append    bool       `json:"append,omitempty"`
	LastChunk bool       `json:"lastChunk,omitempty"`
}

// legacyParams03 is what 0.3 params may hold; each method uses its part.
type legacyParams03 struct {
	Message       *message03 `json:"message"`
	Configuration *struct {
		AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
		HistoryLength       *int     `json:"historyLength,omitempty"`
		Blocking            *bool    `json:"blocking,omitempty"`
	} `json:"configuration"`
	Metadata      map[string]any `json:"metadata"`
	ID            string         `json:"id"`
	HistoryLength *int           `json:"historyLength"`
}

// fromLegacy rewrites a 0.3 request as the 1.0 request it means.
func fromLegacy(req Request) (Request, error) {
	method, ok := legacyMethods[req.Method]
	if !ok {
		return req, fmt.Errorf("%w: method %q is not served in A2A 0.3: use message/send, message/stream, tasks/get, tasks/cancel or tasks/resubscribe (or send %s: %s)",
			errMethod, clip(req.Method), HeaderVersion, ProtocolVersion)
	}
	var p legacyParams03
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return req, fmt.Errorf("%w: the params of %s do not decode: %v", ErrInvalidParams, req.Method, err)
		}
	}
	var params any
	switch method {
	case MethodSendMessage, MethodSendStreamingMessage:
		sm := SendMessageRequest{Metadata: p.Metadata}
		if p.Message != nil {
			m, err := p.Message.core()
			if err != nil {
				return req, err
			}
			sm.Message = &m
		}
		if c := p.Configuration; c != nil {
			sm.Configuration = &SendMessageConfiguration{AcceptedOutputModes: c.AcceptedOutputModes, HistoryLength: c.HistoryLength,
				ReturnImmediately: c.Blocking != nil && !*c.Blocking}
		}
		params = sm
	default:
		params = GetTaskRequest{ID: p.ID, HistoryLength: p.HistoryLength}
	}
	b, err := json.Marshal(params)
	if err != nil {
		return req, err
	}
	return Request{JSONRPC: req.JSONRPC, ID: req.ID, Method: method, Params: b}, nil
}

// errMethod marks a method the version does not define (-32601).
var errMethod = fmt.Errorf("a2a: method not found")

// core is m in 1.0 form.
func (m message03) core() (Message, error) {
	out := Message{MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Metadata: m.Metadata, ReferenceTaskIDs: m.ReferenceTaskIDs}
	switch m.Role {
	case "user":
		out.Role = RoleUser
	case "agent":
		out.Role = RoleAgent
	default:
		out.Role = Role(m.Role)
	}
	for i, p := range m.Parts {
		cp := Part{Metadata: p.Metadata}
		switch p.Kind {
		case "text":
			if p.Text == nil {
				return out, fmt.Errorf("%w: parts[%d]: a text part without text", ErrInvalidParams, i)
			}
			cp.Text = p.Text
		case "data":
			cp.Data = p.Data
		case "file":
			if p.File == nil {
				return out, fmt.Errorf("%w: parts[%d]: a file part without file", ErrInvalidParams, i)
			}
			cp.URL, cp.MediaType, cp.Filename = p.File.URI, p.File.MimeType, p.File.Name
			if p.File.Bytes != "" {
				var b Bytes
				if err := b.UnmarshalJSON([]byte(`"` + p.File.Bytes + `"`)); err != nil {
					return out, fmt.Errorf("%w: parts[%d]: file.bytes: %v", ErrInvalidParams, i, err)
				}
				cp.Raw = b
			}
		default:
			return out, fmt.Errorf("%w: parts[%d]: kind %q: use text, file or data", ErrInvalidParams, i, p.Kind)
		}
		out.Parts = append(out.Parts, cp)
	}
	return out, nil
}

func legacyState(s TaskState) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_")), "_", "-")
}

func legacyParts(parts []Part) []part03 {
	out := make([]part03, 0, len(parts))
	for _, p := range parts {
		lp := part03{Metadata: p.Metadata}
		switch {
		case p.Text != nil:
			lp.Kind, lp.Text = "text", p.Text
		case p.Raw != nil || p.URL != "":
			lp.Kind = "file"
			lp.File = &file03{URI: p.URL, MimeType: p.MediaType, Name: p.Filename}
			if p.Raw != nil {
				lp.File.Bytes = base64.StdEncoding.EncodeToString(p.Raw)
			}
		default:
			lp.Kind, lp.Data = "data", p.Data
			if d := bytes.TrimSpace(p.Data); len(d) == 0 || d[0] != '{' { // 0.3 data is an object
				lp.Data, _ = json.Marshal(map[string]json.RawMessage{"value": p.Data})
			}
		}
		out = append(out, lp)
	}
	return out
}

func legacyMessage(m *Message) *message03 {
	if m == nil {
		return nil
	}
	role := "agent"
	if m.Role == RoleUser {
		role = "user"
	}
	return &message03{Kind: "message", MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Role: role,
		Parts: legacyParts(m.Parts), Metadata: m.Metadata, ReferenceTaskIDs: m.ReferenceTaskIDs}
}

func legacyStatus(s TaskStatus) status03 {
	return status03{State: legacyState(s.State), Message: legacyMessage(s.Message), Timestamp: s.Timestamp}
}

func legacyArtifact(a Artifact) artifact03 {
	return artifact03{ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description, Parts: legacyParts(a.Parts), Metadata: a.Metadata}
}

func legacyTask(t Task) task03 {
	out := task03{Kind: "task", ID: t.ID, ContextID: t.ContextID, Status: legacyStatus(t.Status), Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, legacyArtifact(a))
	}
	for i := range t.History {
		out.History = append(out.History, *legacyMessage(&t.History[i]))
	}
	return out
}

// toLegacy turns a 1.0 result into its 0.3 form.
func toLegacy(res any) any {
	switch r := res.(type) {
	case SendMessageResponse:
		if r.Message != nil {
			return legacyMessage(r.Message)
		}
		return legacyTask(*r.Task)
	case Task:
		return legacyTask(r)
	}
	return res
}

// legacyEvent is a stream event in 0.3 form; final marks the event after
// which the stream ends.
func legacyEvent(sr StreamResponse, final bool) any {
	switch {
	case sr.Task != nil:
		return legacyTask(*sr.Task)
	case sr.Message != nil:
		return legacyMessage(sr.Message)
	case sr.StatusUpdate != nil:
		u := sr.StatusUpdate
		return statusUpdate03{Kind: "status-update", TaskID: u.TaskID, ContextID: u.ContextID, Status: legacyStatus(u.Status), Final: final}
	case sr.ArtifactUpdate != nil:
		u := sr.ArtifactUpdate
		return artifactUpdate03{Kind: "artifact-update", TaskID: u.TaskID, ContextID: u.ContextID, Artifact: legacyArtifact(u.Artifact), Append: u.Append, LastChunk: u.LastChunk}
	}
	return sr
}

// card03 is an agent card in 0.3 form.
type card03 struct {
	ProtocolVersion      string         `json:"protocolVersion"`
	Name                 string         `json:"name"`
	Description          string         `json:"description"`
	URL                  string         `json:"url"`
	PreferredTransport   string         `json:"preferredTransport"`
	AdditionalInterfaces []iface03      `json:"additionalInterfaces,omitempty"`
	Provider             *AgentProvider `json:"provider,omitempty"`
	Version              string         `json:"version"`
	Capabilities         capabilities03 `json:"capabilities"`
	DefaultInputModes    []string       `json:"defaultInputModes"`
	DefaultOutputModes   []string       `json:"defaultOutputModes"`
	Skills               []AgentSkill   `json:"skills"`
}

type capabilities03 struct {
	Streaming         bool `json:"streaming"`
	PushNotifications bool `json:"pushNotifications"`
}

type iface03 struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

// legacyCard is c in 0.3 form, at its 0.3 interface's URL.
func legacyCard(c AgentCard) card03 {
	url := ""
	for _, in := range c.SupportedInterfaces {
		if in.ProtocolVersion == LegacyVersion || url == "" {
			url = in.URL
		}
	}
	return card03{ProtocolVersion: "0.3.0", Name: c.Name, Description: c.Description, URL: url, PreferredTransport: BindingJSONRPC,
		AdditionalInterfaces: []iface03{{URL: url, Transport: BindingJSONRPC}}, Provider: c.Provider, Version: c.Version,
		Capabilities: capabilities03{Streaming: c.Capabilities.Streaming}, DefaultInputModes: c.DefaultInputModes,
		DefaultOutputModes: c.DefaultOutputModes, Skills: c.Skills}
}

// callLegacy makes a 1.0 call of the client's methods to an agent that
// speaks 0.3 only, translating the params and the result.
func (c *Client) callLegacy(ctx context.Context, method string, params, result any) error {
	var lm string
	var lp any
	switch p := params.(type) {
	case SendMessageRequest:
		blocking := p.Configuration == nil || !p.Configuration.ReturnImmediately
		lm, lp = "message/send", map[string]any{"message": legacyMessage(p.Message), "configuration": map[string]any{"blocking": blocking}, "metadata": p.Metadata}
	case GetTaskRequest:
		lm, lp = "tasks/get", map[string]any{"id": p.ID, "historyLength": p.HistoryLength}
	case CancelTaskRequest:
		lm, lp = "tasks/cancel", map[string]any{"id": p.ID}
	default:
		return fmt.Errorf("%w: %s has no A2A 0.3 form", ErrUnsupported, method)
	}
	var raw json.RawMessage
	if err := c.roundTrip(ctx, LegacyVersion, lm, lp, &raw); err != nil {
		return err
	}
	var kind struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(raw, &kind)
	var core any
	var err error
	switch kind.Kind {
	case "task":
		core, err = decodeCore[task03](raw, lm, "task")
	case "message":
		core, err = decodeCore[message03](raw, lm, "message")
	default:
		err = fmt.Errorf("%w: %s answered kind %q, not a task or message", ErrRemote, lm, kind.Kind)
	}
	if err != nil {
		return err
	}
	switch dst := result.(type) {
	case *SendMessageResponse:
		switch v := core.(type) {
		case Task:
			dst.Task = &v
		case Message:
			dst.Message = &v
		}
	case *Task:
		t, ok := core.(Task)
		if !ok {
			return fmt.Errorf("%w: %s answered a message, not a task", ErrRemote, lm)
		}
		*dst = t
	}
	return nil
}

// decodeCore decodes raw, a 0.3 answer of method lm holding a what, as W
// and converts it to its 1.0 form.
func decodeCore[W interface{ core() (C, error) }, C any](raw json.RawMessage, lm, what string) (any, error) {
	var w W
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("%w: %s: the %s does not decode: %v", ErrRemote, lm, what, err)
	}
	c, err := w.core()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrRemote, lm, err)
	}
	return c, nil
}

// core is t in 1.0 form.
func (t task03) core() (Task, error) {
	out := Task{ID: t.ID, ContextID: t.ContextID, Metadata: t.Metadata}
	st, err := t.Status.core()
	if err != nil {
		return out, err
	}
	out.Status = st
	for _, a := range t.Artifacts {
		ca := Artifact{ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description, Metadata: a.Metadata}
		m, err := message03{Parts: a.Parts}.core()
		if err != nil {
			return out, err
		}
		ca.Parts = m.Parts
		out.Artifacts = append(out.Artifacts, ca)
	}
	for _, h := range t.History {
		m, err := h.core()
		if err != nil {
			return out, err
		}
		out.History = append(out.History, m)
	}
	return out, nil
}

func (s status03) core() (TaskStatus, error) {
	out := TaskStatus{State: TaskState("TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(s.State, "-", "_"))), Timestamp: s.Timestamp}
	if _, known := stateNames[out.State]; !known {
		return out, fmt.Errorf("task state %q is not one of A2A 0.3's", s.State)
	}
	if s.Message != nil {
		m, err := s.Message.core()
		if err != nil {
			return out, err
		}
		out.Message = &m
	}
	return out, nil
}

var stateNames = func() map[TaskState]bool {
	m := map[TaskState]bool{}
	for _, s := range stateNumbers {
		m[s] = true
	}
	return m
}()
