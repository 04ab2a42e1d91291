package badinput

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bridge/a2a"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// badID is an id that cannot be a subject token (bus.ValidateToken).
type badID struct {
	name, id string
	// inHeader: the id can travel in a NATS header (no CR, LF or NUL,
	// which a header cannot carry at all).
	inHeader bool
}

// badIDs are the shapes of ids a hostile or careless client sends; every
// surface that takes an id is tried with each.
var badIDs = []badID{
	{"with dots", "a.b.c", true}, {"a wildcard", "*", true}, {"a tail wildcard", ">", true}, {"ending in a wildcard", "a>", true},
	{"with a space", "a b", true}, {"not ASCII", "café", true}, {"of 129 characters", strings.Repeat("i", 129), true},
	{"of 300 characters", strings.Repeat("i", 300), true}, {"with a slash", "a/b", true}, {"with a colon", "a:b", true},
	{"with a dollar", "$a", true}, {"with a tab", "a\tb", true}, {"not UTF-8", "a\xffb", true},
	{"with a newline", "a\nb", false}, {"with a NUL", "a\x00b", false},
}

// idCases sends each bad id shape to each surface that takes an id: the
// NATS subjects (chat, tasks, submissions), the gateway's paths, queries
// and bodies, the A2A bridge and the MCP chat tool. Each must be refused
// with invalid_id (invalid_input for an agent name, not_found for what
// only looks up), on the subject its sender can compute or in the HTTP
// answer.
func idCases() []badCase {
	var cs []badCase
	for _, b := range badIDs {
		cs = append(cs, idCasesOf(b)...)
	}
	return cs
}

func idCasesOf(b badID) []badCase {
	var cs []badCase
	nats := func(name, kind, code string, send func(*testing.T, *shared, string) sent) {
		cs = append(cs, badCase{name: kind + "/" + name + " " + b.name, kind: kind, code: code, send: send})
	}
	call := func(surface, name, kind string, status int, code string, do func(ctx context.Context, s *shared, id string) (reply, error)) {
		cs = append(cs, badCase{name: surface + "/" + name + " " + b.name, kind: kind, status: status, code: code, call: do})
	}
	gw := func(name, method string, path func() string, contentType, body string, status int, code string) {
		call("gateway", name, "http", status, code, func(ctx context.Context, s *shared, _ string) (reply, error) {
			return httpDo(ctx, method, s.gw.URL+path(), contentType, []byte(body))
		})
	}
	p := url.PathEscape(b.id)
	q := url.QueryEscape(b.id)

	// NATS: the conversation id of a chat request's data; the answer is on
	// the event id's subject.
	nats("chat conversation id", "chat", schemas.CodeInvalidID, func(t *testing.T, s *shared, id string) sent {
		return s.chatSent(event(t, s.names.ChatRequest(), bus.TypeChatRequested, id, schemas.ChatRequest{ConversationID: b.id, Message: "hello"}, nil), id)
	})
	if b.inHeader {
		// Headers set by hand, as a plain nats.go client would: a header
		// may carry bytes a CloudEvent attribute may not (not UTF-8).
		ce := func(typ, id string, more ...string) []string {
			return append([]string{"ce-specversion", "1.0", "ce-id", id, "ce-source", "plain", "ce-type", typ, "Content-Type", "application/json"}, more...)
		}
		// The conversationid extension alone: it must name the request's
		// conversation (the event id, when the data names none).
		nats("chat conversationid extension", "chat", schemas.CodeMalformedEvent, func(t *testing.T, s *shared, id string) sent {
			return s.chatSent(raw(s.names.ChatRequest(), `{"message":"hello"}`, ce(bus.TypeChatRequested, id, "ce-conversationid", b.id)...), id)
		})
		// A task's id: refused on mesh.dead.TextAgent, matched by the
		// sequence its publish was stored at.
		nats("task id", "task", schemas.CodeMalformedEvent, func(t *testing.T, s *shared, id string) sent {
			subj, _ := s.names.Task(text.Name)
			dead, _ := s.names.Dead(text.Name)
			return sent{msg: raw(subj, mustJSON(textTask("hello", nil)), ce(bus.TypeTaskRequested, b.id)...),
				stream: s.names.DeadStream(), answer: dead, bySequence: true}
		})
		// A submission's run id: answered on the event id's subject (an
		// attribute that is not UTF-8 is no CloudEvent at all).
		runCode := schemas.CodeInvalidID
		if !utf8.ValidString(b.id) {
			runCode = schemas.CodeMalformedEvent
		}
		nats("submission run id", "pipeline", runCode, func(t *testing.T, s *shared, id string) sent {
			return s.runSent(raw(s.names.PipelineSubmit(), mustJSON(pipe(step("a", text.Name, upText, nil))), ce(bus.TypePipelineSubmitted, id, "ce-runid", b.id)...), id)
		})
	}

	// The gateway: ids in paths, queries and bodies.
	gw("GET run", http.MethodGet, func() string { return "/api/runs/" + p }, "", "", http.StatusBadRequest, schemas.CodeInvalidID)
	gw("GET run graph", http.MethodGet, func() string { return "/api/runs/" + p + "/graph" }, "", "", http.StatusBadRequest, schemas.CodeInvalidID)
	gw("GET conversation", http.MethodGet, func() string { return "/api/conversations/" + p }, "", "", http.StatusBadRequest, schemas.CodeInvalidID)
	gw("cancel run", http.MethodPost, func() string { return "/api/runs/" + p + "/cancel" }, "", "", http.StatusBadRequest, schemas.CodeInvalidID)
	gw("approve step of run", http.MethodPost, func() string { return "/api/runs/" + p + "/steps/a/approve" }, "application/json", `{}`, http.StatusBadRequest, schemas.CodeInvalidID)
	gw("approve step", http.MethodPost, func() string { return "/api/runs/r1/steps/" + p + "/approve" }, "application/json", `{}`, http.StatusBadRequest, schemas.CodeInvalidID)
	gw("submit with run_id", http.MethodPost, func() string { return "/api/pipelines?run_id=" + q }, "application/json",
		mustJSON(pipe(step("a", text.Name, upText, nil))), http.StatusBadRequest, schemas.CodeInvalidID)
	gw("chat conversation_id", http.MethodPost, func() string { return "/api/chat" }, "application/json",
		mustJSON(map[string]any{"conversation_id": b.id, "message": "hello"}), http.StatusBadRequest, schemas.CodeInvalidID)
	gw("GET task result", http.MethodGet, func() string { return "/api/agents/" + text.Name + "/tasks/" + p }, "", "", http.StatusBadRequest, schemas.CodeInvalidID)
	gw("task to agent", http.MethodPost, func() string { return "/api/agents/" + p + "/tasks" }, "application/json",
		mustJSON(textTask("hello", nil)), http.StatusBadRequest, schemas.CodeInvalidInput)
	gw("GET agent", http.MethodGet, func() string { return "/api/agents/" + p }, "", "", http.StatusBadRequest, schemas.CodeInvalidInput)
	fileStatus, fileCode := http.StatusNotFound, schemas.CodeNotFound // an id that only looks a file up
	if len(b.id) > 128 || strings.ContainsAny(b.id, " /\\\t\n") {
		fileStatus, fileCode = http.StatusBadRequest, schemas.CodeInvalidInput
	}
	gw("GET file", http.MethodGet, func() string { return "/api/files/" + p }, "", "", fileStatus, fileCode)

	// The A2A bridge: a task id it never issued; a chat context that
	// cannot be a conversation.
	call("a2a", "GetTask id", "a2a", http.StatusOK, "-32001", func(ctx context.Context, s *shared, _ string) (reply, error) {
		return a2aDo(ctx, s.a2a.URL+a2a.PathAgents+"/"+text.Name, rpcBody(a2a.MethodGetTask, map[string]any{"id": b.id}))
	})
	call("a2a", "chat contextId", "a2a", http.StatusOK, "-32602", func(ctx context.Context, s *shared, _ string) (reply, error) {
		msg := a2a.Message{MessageID: s.id("m"), Role: a2a.RoleUser, ContextID: b.id, Parts: []a2a.Part{a2a.TextPart("hello")}}
		return a2aDo(ctx, s.a2a.URL+a2a.PathChat, rpcBody(a2a.MethodSendMessage, a2a.SendMessageRequest{Message: &msg}))
	})
	// The MCP chat tool.
	call("mcp", "chat conversation_id", "mcp", http.StatusOK, schemas.CodeInvalidID, func(ctx context.Context, s *shared, _ string) (reply, error) {
		return s.mcpCall(ctx, "chat", map[string]any{"message": "hello", "conversation_id": b.id})
	})
	return cs
}

// rpcBody is a JSON-RPC 2.0 request of method with id 1.
func rpcBody(method string, params any) string {
	return mustJSON(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}
