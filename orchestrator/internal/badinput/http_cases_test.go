package badinput

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bridge/a2a"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/gateway"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// caller makes one request of a surface.
type caller = func(ctx context.Context, s *shared, id string) (reply, error)

// gwReq is a request to the gateway: path may hold {id}, the case's id.
func gwReq(method, path, contentType, body string, header ...string) caller {
	return func(ctx context.Context, s *shared, id string) (reply, error) {
		return httpDo(ctx, method, s.gw.URL+strings.ReplaceAll(path, "{id}", id), contentType, []byte(strings.ReplaceAll(body, "{id}", id)), header...)
	}
}

const textTaskJSON = `{"inputs":{"text":{"data_type":"TEXT","value":"hello"}}}`

// gatewayCases are bad requests of the gateway's HTTP API: media types,
// bodies, limits, cross-site requests, unknown things. Each is answered
// with its HTTP status and a coded JSON error.
func gatewayCases() []badCase {
	var cs []badCase
	add := func(name string, status int, code string, do caller) {
		cs = append(cs, badCase{name: "gateway/" + name, kind: "http", status: status, code: code, call: do})
	}
	task := "/api/agents/" + text.Name + "/tasks"
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", ""} {
		for _, path := range []string{task, "/api/chat", "/api/runs/r1/steps/a/approve", "/api/runs/r1/steps/a/input"} {
			add(fmt.Sprintf("POST %s as %q", path, ct), http.StatusUnsupportedMediaType, schemas.CodeInvalidRequest, gwReq(http.MethodPost, path, ct, `{"message":"hi","value":"x"}`))
		}
		if ct != "" {
			add(fmt.Sprintf("POST /api/pipelines as %q", ct), http.StatusUnsupportedMediaType, schemas.CodeInvalidRequest, gwReq(http.MethodPost, "/api/pipelines", ct, `name: x`))
		}
	}
	json := "application/json"
	// A body that is not the endpoint's JSON: malformed_event.
	add("task body not JSON", http.StatusBadRequest, schemas.CodeMalformedEvent, gwReq(http.MethodPost, task, json, `{`))
	add("task body a JSON array", http.StatusBadRequest, schemas.CodeMalformedEvent, gwReq(http.MethodPost, task, json, `[1]`))
	add("task body with an unknown field", http.StatusBadRequest, schemas.CodeMalformedEvent, gwReq(http.MethodPost, task, json, `{"input":{}}`))
	add("task body of 2 MiB", http.StatusRequestEntityTooLarge, schemas.CodeTooLarge, gwReq(http.MethodPost, task, json, `{"instruction":"`+strings.Repeat("a", 2<<20)+`"}`))
	add("task timeout_ms negative", http.StatusBadRequest, schemas.CodeInvalidInput, gwReq(http.MethodPost, task, json, `{"timeout_ms":-1}`))
	add("task timeout_ms of a year", http.StatusBadRequest, schemas.CodeInvalidInput, gwReq(http.MethodPost, task, json, `{"timeout_ms":31536000000}`))
	add("task wait not a boolean", http.StatusBadRequest, schemas.CodeInvalidRequest, gwReq(http.MethodPost, task+"?wait=perhaps", json, textTaskJSON))
	add("task to an agent never seen", http.StatusNotFound, schemas.CodeUnknownAgent, gwReq(http.MethodPost, "/api/agents/NoSuchAgent/tasks", json, textTaskJSON))
	add("task missing its input", http.StatusBadRequest, schemas.CodeInvalidInput, gwReq(http.MethodPost, task, json, `{"inputs":{}}`))
	add("task input of the wrong type", http.StatusBadRequest, schemas.CodeInvalidInput, gwReq(http.MethodPost, task, json, `{"inputs":{"text":{"data_type":"TEXT","value":5}}}`))
	add("task unknown op", http.StatusBadRequest, schemas.CodeInvalidParams, gwReq(http.MethodPost, task, json, `{"inputs":{"text":{"data_type":"TEXT","value":"a"}},"params":{"op":"shout"}}`))
	add("task undeclared param", http.StatusBadRequest, schemas.CodeInvalidParams, gwReq(http.MethodPost, task, json, `{"inputs":{"text":{"data_type":"TEXT","value":"a"}},"params":{"loud":true}}`))
	add("chat empty message", http.StatusBadRequest, schemas.CodeInvalidRequest, gwReq(http.MethodPost, "/api/chat", json, `{"message":"  "}`))
	add("chat message a number", http.StatusBadRequest, schemas.CodeMalformedEvent, gwReq(http.MethodPost, "/api/chat", json, `{"message":5}`))
	add("chat message of 70 KB", http.StatusRequestEntityTooLarge, schemas.CodeTooLarge, gwReq(http.MethodPost, "/api/chat", json, `{"message":"`+strings.Repeat("word ", 14<<10)+`"}`))
	add("pipeline body not JSON", http.StatusBadRequest, schemas.CodeInvalidPipeline, gwReq(http.MethodPost, "/api/pipelines", json, `{`))
	add("pipeline with no steps", http.StatusBadRequest, schemas.CodeInvalidPipeline, gwReq(http.MethodPost, "/api/pipelines", json, `{"name":"x","steps":[]}`))
	add("pipeline naming an unknown agent", http.StatusBadRequest, schemas.CodeInvalidPipeline, gwReq(http.MethodPost, "/api/pipelines", json, mustJSON(pipe(step("a", "NoSuchAgent", nil, nil)))))
	filePipe := `{"name":"x","steps":[{"id":"a","kind":"pipeline","pipeline":{"file":"/etc/passwd"}}]}`
	add("pipeline with a sub-pipeline file", http.StatusBadRequest, schemas.CodeInvalidPipeline, gwReq(http.MethodPost, "/api/pipelines", json, filePipe))
	add("validate a sub-pipeline file", http.StatusBadRequest, schemas.CodeInvalidPipeline, gwReq(http.MethodPost, "/api/pipelines/validate", json, filePipe))
	add("validate a cycle", http.StatusBadRequest, schemas.CodeInvalidPipeline, gwReq(http.MethodPost, "/api/pipelines/validate", json, mustJSON(pipe(
		step("a", text.Name, upText, func(s *pipelinespec.PipelineStep) { s.DependsOn = []string{"b"} }),
		step("b", text.Name, upText, func(s *pipelinespec.PipelineStep) { s.DependsOn = []string{"a"} })))))
	cs = append(cs, badCase{name: "gateway/submit with the run_id of an existing run", kind: "http", status: http.StatusConflict, code: gateway.CodeRunExists,
		call: func(ctx context.Context, s *shared, id string) (reply, error) {
			spec := mustJSON(pipe(step("a", text.Name, upText, nil)))
			if r, err := httpDo(ctx, http.MethodPost, s.gw.URL+"/api/pipelines?run_id="+id, json, []byte(spec)); err != nil || r.status != http.StatusAccepted {
				return reply{status: r.status, code: "first submission: " + r.code, body: r.body}, err
			}
			// Once the orchestrator has stored the first run. (Before
			// that the gateway cannot know the id is taken: see the report
			// of issue 25.)
			var r reply
			var err error
			if fixture.Until(ctx.Done(), func() bool {
				r, err = httpDo(ctx, http.MethodGet, s.gw.URL+"/api/runs/"+id, "", nil)
				return err != nil || r.status == http.StatusOK
			}); err != nil {
				return r, err
			}
			return httpDo(ctx, http.MethodPost, s.gw.URL+"/api/pipelines?run_id="+id, json, []byte(spec))
		}})
	cross := []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}
	for _, path := range []string{task, "/api/chat", "/api/pipelines", "/api/runs/r1/cancel", "/api/files?name=a.txt"} {
		add("cross-site POST "+path, http.StatusForbidden, gateway.CodeCrossOrigin, gwReq(http.MethodPost, path, json, `{"message":"hi"}`, cross...))
	}
	for _, path := range []string{"/api/agents", "/api/runs", "/api/conversations"} {
		add("GET "+path+" for a foreign Host", http.StatusForbidden, gateway.CodeForeignHost, gwReq(http.MethodGet, path, "", "", "Host", "evil.example:80"))
	}
	add("DELETE /api/agents", http.StatusMethodNotAllowed, schemas.CodeInvalidRequest, gwReq(http.MethodDelete, "/api/agents", "", ""))
	add("PUT /api/chat", http.StatusMethodNotAllowed, schemas.CodeInvalidRequest, gwReq(http.MethodPut, "/api/chat", json, `{}`))
	add("GET an endpoint that does not exist", http.StatusNotFound, schemas.CodeNotFound, gwReq(http.MethodGet, "/api/nope", "", ""))
	add("GET a run that does not exist", http.StatusNotFound, schemas.CodeNotFound, gwReq(http.MethodGet, "/api/runs/{id}", "", ""))
	add("GET a conversation that does not exist", http.StatusNotFound, schemas.CodeNotFound, gwReq(http.MethodGet, "/api/conversations/{id}", "", ""))
	add("cancel a run that does not exist", http.StatusNotFound, schemas.CodeNotFound, gwReq(http.MethodPost, "/api/runs/{id}/cancel", "", ""))
	add("approve a step of a run that does not exist", http.StatusConflict, schemas.CodeNotWaiting, gwReq(http.MethodPost, "/api/runs/{id}/steps/a/approve", json, `{}`))
	add("approve with an unknown field", http.StatusBadRequest, schemas.CodeMalformedEvent, gwReq(http.MethodPost, "/api/runs/{id}/steps/a/approve", json, `{"approved":true}`))
	add("GET the content of a file that does not exist", http.StatusNotFound, schemas.CodeNotFound, gwReq(http.MethodGet, "/api/files/f-{id}/content", "", ""))
	add("upload an empty file", http.StatusBadRequest, schemas.CodeInvalidInput, gwReq(http.MethodPost, "/api/files?name=a.txt", "text/plain", ""))
	add("upload without a name", http.StatusBadRequest, schemas.CodeInvalidInput, gwReq(http.MethodPost, "/api/files", "text/plain", "hello"))
	add("upload a multipart body without a part", http.StatusBadRequest, schemas.CodeInvalidInput, gwReq(http.MethodPost, "/api/files", "multipart/form-data; boundary=xyz", "--xyz--\r\n"))
	return cs
}

// a2aCases are bad JSON-RPC requests of the A2A bridge; each is answered
// with its JSON-RPC error code.
func a2aCases() []badCase {
	var cs []badCase
	agentURL := func(s *shared) string { return s.a2a.URL + a2a.PathAgents + "/" + text.Name }
	add := func(name, code string, version string, body func(s *shared) string) {
		cs = append(cs, badCase{name: "a2a/" + name, kind: "a2a", status: http.StatusOK, code: code,
			call: func(ctx context.Context, s *shared, id string) (reply, error) {
				r, err := httpDo(ctx, http.MethodPost, agentURL(s), "application/json", []byte(body(s)), a2a.HeaderVersion, version)
				if err != nil || r.status != http.StatusOK {
					return r, err
				}
				return a2aReply(r), nil
			}})
	}
	send := func(parts ...a2a.Part) func(*shared) string {
		return func(s *shared) string {
			return rpcBody(a2a.MethodSendMessage, a2a.SendMessageRequest{Message: &a2a.Message{MessageID: s.id("m"), Role: a2a.RoleUser, Parts: parts}})
		}
	}
	data := func(v any) a2a.Part { return a2a.Part{Data: []byte(mustJSON(v)), MediaType: "application/json"} }
	fixed := func(b string) func(*shared) string { return func(*shared) string { return b } }
	add("a 1.0 method in 0.3", itoa(a2a.CodeMethodNotFound), "0.3", send(a2a.TextPart("x")))
	add("version 2.0", itoa(a2a.CodeVersionNotSupported), "2.0", send(a2a.TextPart("x")))
	add("a 0.3 method in 1.0", itoa(a2a.CodeMethodNotFound), "1.0", fixed(rpcBody("message/send", map[string]any{})))
	add("a method that does not exist", itoa(a2a.CodeMethodNotFound), "1.0", fixed(rpcBody("DoEverything", map[string]any{})))
	add("body not JSON", itoa(a2a.CodeParseError), "1.0", fixed(`{`))
	add("jsonrpc 1.0", itoa(a2a.CodeInvalidRequest), "1.0", fixed(`{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{}}`))
	add("request an array", itoa(a2a.CodeInvalidRequest), "1.0", fixed(`[]`))
	add("params an array", itoa(a2a.CodeInvalidParams), "1.0", fixed(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[]}`))
	add("missing input", itoa(a2a.CodeInvalidParams), "1.0", send(data(map[string]any{"params": map[string]any{"op": "upper"}})))
	add("bad param", itoa(a2a.CodeInvalidParams), "1.0", send(a2a.TextPart("x"), data(map[string]any{"params": map[string]any{"op": "sideways"}})))
	add("unknown data key", itoa(a2a.CodeInvalidParams), "1.0", send(data(map[string]any{"txt": "x"})))
	add("file by URL", itoa(a2a.CodeContentType), "1.0", send(a2a.TextPart("x"), a2a.Part{URL: "https://example.com/a.png"}))
	add("two contents in a part", itoa(a2a.CodeInvalidParams), "1.0", send(a2a.Part{URL: "u", Data: []byte(`{}`)}))
	add("no parts", itoa(a2a.CodeInvalidParams), "1.0", send())
	add("no message", itoa(a2a.CodeInvalidParams), "1.0", fixed(rpcBody(a2a.MethodSendMessage, map[string]any{})))
	add("agent role", itoa(a2a.CodeInvalidParams), "1.0", func(s *shared) string {
		return rpcBody(a2a.MethodSendMessage, a2a.SendMessageRequest{Message: &a2a.Message{MessageID: s.id("m"), Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("x")}}})
	})
	add("push config", itoa(a2a.CodePushNotSupported), "1.0", fixed(rpcBody("CreateTaskPushNotificationConfig", map[string]any{})))
	add("extended card", itoa(a2a.CodeExtendedCard), "1.0", fixed(rpcBody("GetExtendedAgentCard", map[string]any{})))
	add("cancel a task it never issued", itoa(a2a.CodeTaskNotFound), "1.0", fixed(rpcBody(a2a.MethodCancelTask, map[string]any{"id": "nope"})))
	return cs
}

func itoa(n int) string { return fmt.Sprint(n) }

// a2aReply reads the JSON-RPC error code of an A2A answer.
func a2aReply(r reply) reply {
	out, _ := a2aParse(r)
	return out
}

func a2aParse(r reply) (reply, bool) {
	var rep struct {
		Error *a2a.RPCError `json:"error"`
	}
	r.code = ""
	if err := jsonUnmarshal(r.body, &rep); err != nil {
		r.code = "(not JSON-RPC)"
		return r, false
	}
	if rep.Error != nil {
		r.code = itoa(rep.Error.Code)
	}
	return r, true
}

// mcpCases are bad tool calls of the MCP server; each is a tool error
// carrying the mesh's code (or, for a tool that does not exist, a
// JSON-RPC protocol error).
func mcpCases() []badCase {
	var cs []badCase
	add := func(name, tool string, args any, code string) {
		cs = append(cs, badCase{name: "mcp/" + name, kind: "mcp", status: http.StatusOK, code: code,
			call: func(ctx context.Context, s *shared, id string) (reply, error) { return s.mcpCall(ctx, tool, args) }})
	}
	cs = append(cs, badCase{name: "mcp/a tool that does not exist", kind: "mcp", code: "rpc",
		call: func(ctx context.Context, s *shared, id string) (reply, error) {
			return s.mcpCall(ctx, "NoSuchAgent", map[string]any{})
		}})
	add("TextAgent without its input", text.Name, map[string]any{}, schemas.CodeInvalidInput)
	add("TextAgent text a number", text.Name, map[string]any{"text": 5}, schemas.CodeInvalidInput)
	add("TextAgent text an object", text.Name, map[string]any{"text": map[string]any{"a": 1}}, schemas.CodeInvalidInput)
	add("TextAgent unknown op", text.Name, map[string]any{"text": "a", "op": "shout"}, schemas.CodeInvalidParams)
	add("TextAgent undeclared param", text.Name, map[string]any{"text": "a", "loud": true}, schemas.CodeInvalidParams)
	add("TextAgent negative delay", text.Name, map[string]any{"text": "a", "delay_ms": -1}, schemas.CodeInvalidParams)
	add("chat empty message", "chat", map[string]any{"message": " "}, schemas.CodeInvalidRequest)
	add("chat message a number", "chat", map[string]any{"message": 5}, schemas.CodeInvalidRequest)
	add("chat message of 70 KB", "chat", map[string]any{"message": strings.Repeat("word ", 14<<10)}, schemas.CodeTooLarge)
	add("run_pipeline naming an unknown agent", "run_pipeline", map[string]any{"pipeline": mustJSONValue(pipe(step("a", "NoSuchAgent", nil, nil)))}, schemas.CodeInvalidPipeline)
	add("run_pipeline spec not YAML", "run_pipeline", map[string]any{"pipeline": "steps: [: ]"}, schemas.CodeInvalidPipeline)
	add("run_pipeline spec a number", "run_pipeline", map[string]any{"pipeline": 5}, schemas.CodeInvalidPipeline)
	add("run_pipeline with a sub-pipeline file", "run_pipeline", map[string]any{"pipeline": map[string]any{"name": "x",
		"steps": []any{map[string]any{"id": "a", "kind": "pipeline", "pipeline": map[string]any{"file": "/etc/passwd"}}}}}, schemas.CodeInvalidPipeline)
	return cs
}

// mustJSONValue is v as the JSON value it encodes to (maps and slices).
func mustJSONValue(v any) any {
	var out any
	if err := jsonUnmarshal(mustJSON(v), &out); err != nil {
		panic(err)
	}
	return out
}

// handledCases are inputs that look odd but are valid: the mesh accepts
// and serves them.
func handledCases() []badCase {
	var cs []badCase
	odd := []struct{ name, text string }{
		{"emoji", "héllo 👋 wörld"}, {"right-to-left text", "مرحبا بالعالم"}, {"a NUL character", "a\x00b"},
		{"markup", "<script>alert(1)</script>"}, {"a 60 KB text", strings.Repeat("abc ", 15<<10)}, {"only spaces", "   "},
	}
	for _, o := range odd {
		upper := strings.ToUpper(o.text)
		cs = append(cs, badCase{name: "task/handled: text with " + o.name, kind: "task", handled: true, output: &upper,
			send: task(text.Name, textTask(o.text, map[string]any{"op": "upper"}), nil)})
		cs = append(cs, badCase{name: "gateway/handled: task text with " + o.name, kind: "http", status: http.StatusOK, output: &upper,
			call: gwReq(http.MethodPost, "/api/agents/"+text.Name+"/tasks", "application/json", mustJSON(textTask(o.text, map[string]any{"op": "upper"})))})
	}
	for _, o := range odd[:4] {
		cs = append(cs, badCase{name: "chat/handled: message with " + o.name, kind: "chat", handled: true,
			send: chatTo(schemas.ChatRequest{Message: "upper case this: " + o.text}, nil, self)})
		cs = append(cs, badCase{name: "mcp/handled: TextAgent text with " + o.name, kind: "mcp", status: http.StatusOK,
			call: func(ctx context.Context, s *shared, id string) (reply, error) {
				return s.mcpCall(ctx, text.Name, map[string]any{"text": o.text, "op": "upper"})
			}})
	}
	cs = append(cs,
		badCase{name: "task/handled: an unknown CloudEvents extension", kind: "task", handled: true,
			send: task(text.Name, textTask("a", nil), map[string]string{"whatever": "x"})},
		badCase{name: "chat/handled: a conversation id of 128 characters", kind: "chat", handled: true,
			send: func(t *testing.T, s *shared, id string) sent {
				conv := (id + strings.Repeat("c", 128))[:128]
				out := s.chatSent(event(t, s.names.ChatRequest(), bus.TypeChatRequested, id, schemas.ChatRequest{ConversationID: conv, Message: "hello"}, nil), conv)
				out.convIDs = nil
				return out
			}},
		badCase{name: "pipeline/handled: for_each over one item", kind: "pipeline", handled: true, keys: wholeRun,
			send: submit(pipelinespec.PipelineSpec{Name: "one", Vars: map[string]any{"w": []string{"x"}}, Steps: []pipelinespec.PipelineStep{
				step("each", text.Name, nil, func(s *pipelinespec.PipelineStep) {
					s.Kind, s.ForEach = pipelinespec.StepKindForEach, &pipelinespec.ForEachSpec{Items: "vars.w"}
				})}}, self, self)},
		badCase{name: "gateway/handled: upload named with a path", kind: "http", status: http.StatusCreated,
			call: gwReq(http.MethodPost, "/api/files?name=../../etc/passwd", "text/plain", "hello"),
			check: func(t *testing.T, s *shared, id string, r reply) {
				if !strings.Contains(r.body, `"filename":"passwd"`) {
					t.Errorf("the stored file's name is not the path's base name: %s", r.body)
				}
			}},
		badCase{name: "a2a/handled: message to TextAgent", kind: "a2a", status: http.StatusOK,
			call: func(ctx context.Context, s *shared, id string) (reply, error) { return s.a2aGood(ctx) }},
	)
	return cs
}

// a2aGood sends TextAgent a message over A2A and reads the answer.
func (s *shared) a2aGood(ctx context.Context) (reply, error) {
	body := rpcBody(a2a.MethodSendMessage, a2a.SendMessageRequest{Message: &a2a.Message{MessageID: s.id("m"), Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hello")}}})
	r, err := a2aDo(ctx, s.a2a.URL+a2a.PathAgents+"/"+text.Name, body)
	if err == nil && r.code == "" && !strings.Contains(r.body, string(a2a.StateCompleted)) {
		r.code = "(not completed)"
	}
	return r, err
}

// goodCall checks the surface of kind still serves a good request.
func (s *shared) goodCall(t *testing.T, kind string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var (
		r   reply
		err error
	)
	switch kind {
	case "http":
		r, err = httpDo(ctx, http.MethodPost, s.gw.URL+"/api/agents/"+text.Name+"/tasks", "application/json", []byte(textTaskJSON))
		if err == nil && r.status != http.StatusOK {
			r.code = fmt.Sprintf("HTTP %d", r.status)
		}
	case "a2a":
		r, err = s.a2aGood(ctx)
	case "mcp":
		r, err = s.mcpCall(ctx, text.Name, map[string]any{"text": "hello"})
	}
	if err != nil || r.code != "" {
		t.Fatalf("the next good %s request was not served: %v %s %s", kind, err, r.code, clip(r.body))
	}
}
