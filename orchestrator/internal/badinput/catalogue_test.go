package badinput

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/agents/builtin/summarize"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// sent is what a case sent and where its sender reads the outcome.
type sent struct {
	msg     *nats.Msg
	stream  string // MESH_EVENTS, MESH_RESULTS or MESH_DEAD
	answer  string // the subject the sender reads
	types   []string
	convIDs []string // conversation ids whose keys are checked
	runIDs  []string // run ids whose keys are checked
	agents  []string // agents the registry must not list
	// bySequence reads the answer on a refusal subject: the dead letter
	// naming the stream and sequence the message was stored at.
	bySequence bool
}

type badCase struct {
	name string
	kind string // "chat", "pipeline", "task", "registry", "http", "a2a" or "mcp": the good request sent next
	send func(t *testing.T, s *shared, id string) sent
	code string // the documented code; "" for a dead letter
	// keys each checked id may hold afterwards: nil means none; a refused
	// pipeline that decoded is kept whole as a failed run.
	keys func(id string) []string
	// handled: the request is one the mesh accepts and serves; its final
	// event must say it succeeded.
	handled bool
	// call, instead of send, makes a request of an HTTP surface (the
	// gateway, the A2A bridge) or the MCP server; its answer must have
	// status (when not 0) and code ("" for a success: handled).
	call   func(ctx context.Context, s *shared, id string) (reply, error)
	status int
	// check, when set, looks further at a call's answer.
	check func(t *testing.T, s *shared, id string, r reply)
	// output, when set, is the TEXT output "text" a handled task must
	// have produced.
	output *string
}

func wholeRun(id string) []string { return []string{id, id + ".spec", id + ".state"} }

// chatTo sends a chat request event with id and data; the answer is
// expected on mesh.events.<answerID>.chat.
func chatTo(data any, ext map[string]string, answerID func(id string) string) func(*testing.T, *shared, string) sent {
	return func(t *testing.T, s *shared, id string) sent {
		return s.chatSent(event(t, s.names.ChatRequest(), bus.TypeChatRequested, id, data, ext), answerID(id))
	}
}

func (s *shared) chatSent(msg *nats.Msg, answerID string) sent {
	return sent{msg: msg, stream: s.names.EventsStream(), answer: s.names.Events(answerID, "chat"),
		types: []string{bus.TypeChatResponded}, convIDs: []string{answerID}}
}

func self(id string) string { return id }

// submit sends a pipeline submission with run id run (none when empty).
func submit(spec any, run func(id string) string, answerID func(id string) string) func(*testing.T, *shared, string) sent {
	return func(t *testing.T, s *shared, id string) sent {
		ext := map[string]string{}
		if r := run(id); r != "" {
			ext[bus.ExtRunID] = r
		}
		msg := event(t, s.names.PipelineSubmit(), bus.TypePipelineSubmitted, id, spec, ext)
		return s.runSent(msg, answerID(id))
	}
}

func (s *shared) runSent(msg *nats.Msg, answerID string) sent {
	return sent{msg: msg, stream: s.names.EventsStream(), answer: s.names.Events(answerID, "pipeline"),
		types: []string{bus.TypePipelineCompleted}, runIDs: []string{answerID}}
}

// task sends a task to agent; the result is read on mesh.result.<agent>.<id>.
func task(agent string, req any, ext map[string]string) func(*testing.T, *shared, string) sent {
	return func(t *testing.T, s *shared, id string) sent {
		subj := s.names.Tasks()[:len(s.names.Tasks())-1] + agent
		return sent{msg: event(t, subj, bus.TypeTaskRequested, id, req, ext), stream: s.names.ResultsStream(), answer: s.names.Result(agent, id)}
	}
}

func textTask(v any, params map[string]any) schemas.TaskRequest {
	tv := schemas.TypedValue{DataType: schemas.TypeText, Value: []byte(mustJSON(v))}
	return schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": tv}, Params: params}
}

func docs(ids ...string) schemas.TaskRequest {
	return schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"documents": schemas.FilesValue(schemas.FromIDs(schemas.ContentDocuments, ids...), "t")}}
}

func step(id, agent string, in map[string]string, mod func(*pipelinespec.PipelineStep)) pipelinespec.PipelineStep {
	s := pipelinespec.PipelineStep{ID: id, Agent: agent, Inputs: in}
	if mod != nil {
		mod(&s)
	}
	return s
}

func pipe(steps ...pipelinespec.PipelineStep) pipelinespec.PipelineSpec {
	return pipelinespec.PipelineSpec{Name: "bad", Steps: steps}
}

var upText = map[string]string{"text": "text:hello"}

var long = strings.Repeat("x", 200)

func catalogue() []badCase {
	return slices.Concat(chatCases(), pipelineCases(), taskCases(), fileCases(), registryCases(), silentCases(),
		idCases(), gatewayCases(), a2aCases(), mcpCases(), handledCases())
}

func chatCases() []badCase {
	var cs []badCase
	chat := func(name string, data any, ext map[string]string, answerID func(string) string, code string) {
		cs = append(cs, badCase{name: "chat/" + name, kind: "chat", send: chatTo(data, ext, answerID), code: code})
	}
	chat("empty message", map[string]any{"message": ""}, nil, self, schemas.CodeMalformedEvent)
	chat("blank message", schemas.ChatRequest{Message: "  \n\t "}, nil, self, schemas.CodeInvalidRequest)
	chat("message of 900 KB", schemas.ChatRequest{Message: strings.Repeat("a", 900<<10)}, nil, self, schemas.CodeTooLarge)
	chat("message of 65 KB", schemas.ChatRequest{Message: strings.Repeat("word ", 13<<10)}, nil, self, schemas.CodeTooLarge)
	chat("no message field", map[string]any{"text": "hi"}, nil, self, schemas.CodeMalformedEvent)
	chat("message a number", map[string]any{"message": 5}, nil, self, schemas.CodeMalformedEvent)
	chat("data an array", []string{"hi"}, nil, self, schemas.CodeMalformedEvent)
	chat("data a string", "hi", nil, self, schemas.CodeMalformedEvent)
	chat("data null", nil, nil, self, schemas.CodeMalformedEvent)
	// Conversation ids that cannot be a subject token: idCases.
	chat("conversation id wrong type", map[string]any{"conversation_id": 7, "message": "hello"}, nil, self, schemas.CodeMalformedEvent)
	cs = append(cs,
		badCase{name: "chat/event id with dots and no conversation id", kind: "chat", code: schemas.CodeInvalidID, send: func(t *testing.T, s *shared, id string) sent {
			msg := event(t, s.names.ChatRequest(), bus.TypeChatRequested, id+".x", schemas.ChatRequest{Message: "hello"}, nil)
			return sent{msg: msg, stream: s.names.DeadStream(), answer: s.names.DeadAll()[:len(s.names.DeadAll())-1] + "orchestrator", bySequence: true}
		}},
		badCase{name: "chat/wrong event type", kind: "chat", code: schemas.CodeMalformedEvent, send: func(t *testing.T, s *shared, id string) sent {
			return s.chatSent(event(t, s.names.ChatRequest(), bus.TypeTaskRequested, id, schemas.ChatRequest{Message: "hi"}, nil), id)
		}},
		badCase{name: "chat/binary mode without ce-type", kind: "chat", code: schemas.CodeMalformedEvent, send: func(t *testing.T, s *shared, id string) sent {
			return s.chatSent(raw(s.names.ChatRequest(), `{"message":"hi"}`, "ce-specversion", "1.0", "ce-id", id, "ce-source", "x", "Content-Type", "application/json"), id)
		}},
		badCase{name: "chat/specversion 0.3", kind: "chat", code: schemas.CodeMalformedEvent, send: func(t *testing.T, s *shared, id string) sent {
			return s.chatSent(raw(s.names.ChatRequest(), `{"message":"hi"}`, "ce-specversion", "0.3", "ce-id", id, "ce-source", "x", "ce-type", bus.TypeChatRequested, "Content-Type", "application/json"), id)
		}},
		badCase{name: "chat/body not JSON", kind: "chat", code: schemas.CodeMalformedEvent, send: func(t *testing.T, s *shared, id string) sent {
			return s.chatSent(raw(s.names.ChatRequest(), `message: hi`, "ce-specversion", "1.0", "ce-id", id, "ce-source", "x", "ce-type", bus.TypeChatRequested, "Content-Type", "application/json"), id)
		}},
		badCase{name: "chat/structured body not JSON", kind: "chat", code: schemas.CodeMalformedEvent, send: func(t *testing.T, s *shared, id string) sent {
			msg := raw(s.names.ChatRequest(), `{"specversion":"1.0",`, "Content-Type", "application/cloudevents+json")
			return sent{msg: msg, stream: s.names.DeadStream(), answer: s.names.DeadAll()[:len(s.names.DeadAll())-1] + "orchestrator", bySequence: true}
		}},
	)
	for _, bad := range []struct{ name, key, value string }{
		{"garbage conversation state", "", "\x00\x01garbage"},
		{"conversation state of the wrong shape", "", `{"slots": 5}`},
		{"garbage chat record", ".chat", "not json at all"},
		{"chat record of the wrong shape", ".chat", `{"turns": "many"}`},
	} {
		// The turn is accepted, fails, and is closed: the chat record keeps
		// its answer (for a redelivered request), nothing else is written.
		cs = append(cs, badCase{name: "chat/" + bad.name, kind: "chat", code: schemas.CodeCorruptState,
			keys: func(id string) []string { return slices.Compact([]string{id + bad.key, id + ".chat"}) },
			send: func(t *testing.T, s *shared, id string) sent {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if _, err := s.m.Res.Conversations.Put(ctx, id+bad.key, []byte(bad.value)); err != nil {
					t.Fatal(err)
				}
				return s.chatSent(event(t, s.names.ChatRequest(), bus.TypeChatRequested, s.id("req"), schemas.ChatRequest{ConversationID: id, Message: "hello"}, nil), id)
			}})
	}
	return cs
}

func pipelineCases() []badCase {
	var cs []badCase
	run := func(name string, spec any, code string) {
		cs = append(cs, badCase{name: "pipeline/" + name, kind: "pipeline", send: submit(spec, self, self), code: code, keys: wholeRun})
	}
	run("no steps", pipe(), schemas.CodeInvalidPipeline)
	run("unknown agent", pipe(step("a", "NoSuchAgent", nil, nil)), schemas.CodeInvalidPipeline)
	run("agent name with a dot", pipe(step("a", "Text.Agent", nil, nil)), schemas.CodeInvalidPipeline)
	run("duplicate step ids", pipe(step("a", text.Name, upText, nil), step("a", text.Name, upText, nil)), schemas.CodeInvalidPipeline)
	run("cycle", pipe(step("a", text.Name, upText, func(s *pipelinespec.PipelineStep) { s.DependsOn = []string{"b"} }),
		step("b", text.Name, upText, func(s *pipelinespec.PipelineStep) { s.DependsOn = []string{"a"} })), schemas.CodeInvalidPipeline)
	run("depends on a missing step", pipe(step("a", text.Name, upText, func(s *pipelinespec.PipelineStep) { s.DependsOn = []string{"zz"} })), schemas.CodeInvalidPipeline)
	run("input from a missing step", pipe(step("a", text.Name, map[string]string{"text": "zz.text"}, nil)), schemas.CodeInvalidPipeline)
	run("input from an unknown seed", pipe(step("a", text.Name, map[string]string{"text": "seed.videos"}, nil)), schemas.CodeInvalidPipeline)
	run("undeclared input", pipe(step("a", text.Name, map[string]string{"txt": "text:hi"}, nil)), schemas.CodeInvalidPipeline)
	run("step id with a dot", pipe(step("a.b", text.Name, upText, nil)), schemas.CodeInvalidPipeline)
	run("unknown step kind", pipe(step("a", text.Name, upText, func(s *pipelinespec.PipelineStep) { s.Kind = "loop" })), schemas.CodeInvalidPipeline)
	run("negative timeout", pipe(step("a", text.Name, upText, func(s *pipelinespec.PipelineStep) { s.TimeoutMS = -5 })), schemas.CodeInvalidPipeline)
	run("spec an array", []int{1}, schemas.CodeInvalidPipeline)
	run("steps a string", map[string]any{"name": "x", "steps": "a"}, schemas.CodeInvalidPipeline)
	run("unknown field", map[string]any{"name": "x", "stepz": []any{}}, schemas.CodeInvalidPipeline)
	// Run ids that cannot be a subject token: idCases.
	cs = append(cs,
		badCase{name: "pipeline/seed over the state limit", kind: "pipeline", code: schemas.CodeTooLarge,
			send: submit(map[string]any{"name": "big", "steps": []any{map[string]any{"id": "a", "agent": text.Name, "inputs": upText}},
				"seed": map[string]any{"documents": bigIDs(40000)}}, self, self)},
		badCase{name: "pipeline/run id taken by an earlier run", kind: "pipeline", code: schemas.CodeInvalidID,
			keys: func(id string) []string { return append(wholeRun(id), id+".step.a") }, // the earlier run's
			send: func(t *testing.T, s *shared, id string) sent {
				first := event(t, s.names.PipelineSubmit(), bus.TypePipelineSubmitted, s.id("sub"), pipe(step("a", text.Name, upText, nil)), map[string]string{bus.ExtRunID: id})
				s.publish(t, first)
				s.final(t, s.names.EventsStream(), s.names.Events(id, "pipeline"), 20*time.Second, bus.TypePipelineCompleted)
				again := s.id("sub")
				msg := event(t, s.names.PipelineSubmit(), bus.TypePipelineSubmitted, again, pipe(step("a", text.Name, upText, nil)), map[string]string{bus.ExtRunID: id})
				out := s.runSent(msg, again)
				out.runIDs = []string{id}
				return out
			}},
		badCase{name: "pipeline/wrong event type", kind: "pipeline", code: schemas.CodeMalformedEvent,
			send: func(t *testing.T, s *shared, id string) sent {
				return s.runSent(event(t, s.names.PipelineSubmit(), bus.TypeChatRequested, id, pipe(), map[string]string{bus.ExtRunID: id}), id)
			}},
	)
	return cs
}

// addTask adds a case of a task sent straight to agent.
func addTask(cs *[]badCase, name, agent string, req any, ext map[string]string, code string) {
	*cs = append(*cs, badCase{name: "task/" + name, kind: "task", send: task(agent, req, ext), code: code})
}

func taskCases() []badCase {
	var cs []badCase
	tk := func(name, agent string, req any, ext map[string]string, code string) {
		addTask(&cs, name, agent, req, ext, code)
	}
	tk("missing required input", text.Name, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{}}, nil, schemas.CodeInvalidInput)
	tk("input of the wrong data type", text.Name, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.FilesValue(schemas.FromIDs("", "f-1"), "t")}}, nil, schemas.CodeInvalidInput)
	tk("undeclared input", text.Name, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("a", "t"), "other": schemas.TextValue("b", "t")}}, nil, schemas.CodeInvalidInput)
	tk("TEXT value a number", text.Name, textTask(5, nil), nil, schemas.CodeInvalidInput)
	tk("TEXT value an object", text.Name, textTask(map[string]any{"a": 1}, nil), nil, schemas.CodeInvalidInput)
	tk("unknown op", text.Name, textTask("a", map[string]any{"op": "shout"}), nil, schemas.CodeInvalidParams)
	tk("negative delay", text.Name, textTask("a", map[string]any{"delay_ms": -1}), nil, schemas.CodeInvalidParams)
	tk("unknown param", text.Name, textTask("a", map[string]any{"loud": true}), nil, schemas.CodeInvalidParams)
	tk("op a number", text.Name, textTask("a", map[string]any{"op": 3}), nil, schemas.CodeInvalidParams)
	tk("deadline not a time", text.Name, textTask("a", nil), map[string]string{bus.ExtDeadline: "tomorrow"}, schemas.CodeMalformedEvent)
	tk("deadline passed", text.Name, textTask("a", nil), map[string]string{bus.ExtDeadline: "2001-01-01T00:00:00Z"}, schemas.CodeTimeout)
	tk("inputs an array", text.Name, map[string]any{"inputs": []any{1}}, nil, schemas.CodeMalformedEvent)
	tk("data an array", text.Name, []int{1}, nil, schemas.CodeMalformedEvent)
	tk("negative timeout", text.Name, map[string]any{"inputs": map[string]any{}, "timeout_ms": -1}, nil, schemas.CodeMalformedEvent)
	tk("agent that never ran here", "NoSuchAgent", textTask("a", nil), nil, schemas.CodeUnknownAgent)
	cs = append(cs,
		badCase{name: "task/agent that never ran here, replyto set", kind: "task", code: schemas.CodeUnknownAgent,
			send: func(t *testing.T, s *shared, id string) sent {
				out := task("NoSuchAgentEither", textTask("a", nil), map[string]string{bus.ExtReplyTo: s.names.Result("NoSuchAgentEither", "reply-"+id)})(t, s, id)
				out.answer = s.names.Result("NoSuchAgentEither", "reply-"+id)
				return out
			}},
		badCase{name: "task/wrong event type", kind: "task", code: schemas.CodeMalformedEvent,
			send: func(t *testing.T, s *shared, id string) sent {
				subj, _ := s.names.Task(text.Name)
				return sent{msg: event(t, subj, bus.TypeChatRequested, id, textTask("a", nil), nil), stream: s.names.ResultsStream(), answer: s.names.Result(text.Name, id)}
			}},
		badCase{name: "task/body not JSON", kind: "task", code: schemas.CodeMalformedEvent,
			send: func(t *testing.T, s *shared, id string) sent {
				subj, _ := s.names.Task(text.Name)
				msg := raw(subj, "{oops", "ce-specversion", "1.0", "ce-id", id, "ce-source", "x", "ce-type", bus.TypeTaskRequested, "Content-Type", "application/json")
				return sent{msg: msg, stream: s.names.ResultsStream(), answer: s.names.Result(text.Name, id)}
			}},
		badCase{name: "task/task id with dots, replyto set", kind: "task", code: schemas.CodeMalformedEvent,
			send: func(t *testing.T, s *shared, id string) sent {
				subj, _ := s.names.Task(text.Name)
				msg := event(t, subj, bus.TypeTaskRequested, id+".x", textTask("a", nil), map[string]string{bus.ExtReplyTo: s.names.Result(text.Name, "reply-"+id)})
				return sent{msg: msg, stream: s.names.ResultsStream(), answer: s.names.Result(text.Name, "reply-"+id)}
			}},
	)
	return cs
}

func fileCases() []badCase {
	var cs []badCase
	tk := func(name, agent string, req any, ext map[string]string, code string) {
		addTask(&cs, name, agent, req, ext, code)
	}
	// An agent reading several files skips the ones it cannot read and
	// fails the task invalid_input when none was left, naming each reason.
	tk("file id that does not exist", summarize.Name, docs("f-aaaaaaaaaaaaaaaaaaaa"), nil, schemas.CodeInvalidInput)
	tk("file id that is a path", summarize.Name, docs("../../etc/passwd"), nil, schemas.CodeInvalidInput)
	tk("empty file id", summarize.Name, docs(""), nil, schemas.CodeInvalidInput)
	tk("no documents", summarize.Name, docs(), nil, schemas.CodeInvalidInput)
	tk("spilled collection that does not exist", summarize.Name, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"documents": {
		DataType: schemas.TypeFileIDs, Value: []byte(`{"collection_ref":"collections/0000000000000000000000000000000000000000000000000000000000000000","count":3,"content_type":"documents"}`)}}},
		nil, schemas.CodeNotFound)
	tk("collection ref outside collections/", summarize.Name, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"documents": {
		DataType: schemas.TypeFileIDs, Value: []byte(`{"collection_ref":"f-aaaaaaaaaaaaaaaaaaaa","count":1}`)}}}, nil, schemas.CodeInvalidInput)
	tk("collection count that lies", summarize.Name, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"documents": {
		DataType: schemas.TypeFileIDs, Value: []byte(`{"ids":["f-aaaaaaaaaaaaaaaaaaaa"],"count":9}`)}}}, nil, schemas.CodeInvalidInput)
	tk("duplicate file ids", summarize.Name, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"documents": {
		DataType: schemas.TypeFileIDs, Value: []byte(`{"ids":["f-aaaaaaaaaaaaaaaaaaaa","f-aaaaaaaaaaaaaaaaaaaa"]}`)}}}, nil, schemas.CodeInvalidInput)
	tk("file ids of the wrong hint", summarize.Name, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"documents": schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, "f-aaaaaaaaaaaaaaaaaaaa"), "t")}}, nil, schemas.CodeInvalidInput)
	return cs
}

func bigIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "f-" + strings.Repeat("a", 16) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26)) + string(rune('a'+i/17576%26))
	}
	return out
}

func TestCatalogue(t *testing.T) {
	s := newShared(t)
	cs := catalogue()
	if len(cs) < minCases {
		t.Errorf("the catalogue has %d cases; keep at least %d", len(cs), minCases)
	}
	tally := newTally(t, cs)
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.name] {
			t.Fatalf("two cases named %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// How far the case got when it failed: no answer (silent), a
			// wrong answer or state (corrupt), or the mesh no longer
			// serving the next good request (crash).
			stage := outSilent
			defer func() { tally.add(c, stage, t.Failed()) }()
			id := s.id("bad")
			if c.call != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				r, err := c.call(ctx, s, id)
				if errors.Is(err, errTransport) {
					stage = outCrash
				}
				if err != nil {
					t.Fatalf("no answer: %v", err)
				}
				stage = outCorrupt
				if c.status != 0 && r.status != c.status {
					t.Errorf("HTTP %d (%s), want %d", r.status, clip(r.body), c.status)
				}
				if r.code != c.code {
					t.Errorf("code %q (%s), want %q", r.code, clip(r.body), c.code)
				}
				if c.check != nil && !t.Failed() {
					c.check(t, s, id, r)
				}
				if c.output != nil && !t.Failed() {
					var ans struct {
						Result schemas.AgentResult `json:"result"`
					}
					if err := jsonUnmarshal(r.body, &ans); err != nil {
						t.Errorf("answer %s: %v", clip(r.body), err)
					}
					checkOutput(t, ans.Result, *c.output)
				}
				if t.Failed() {
					return
				}
				stage = outCrash
				s.good(t, c.kind)
				return
			}
			out := c.send(t, s, id)
			var final *nats.Msg
			if out.bySequence {
				ack := s.publishAck(t, out.msg)
				final = s.finalMatching(t, out.stream, out.answer, 20*time.Second, deadFor(ack))
			} else {
				s.publish(t, out.msg)
				final = s.final(t, out.stream, out.answer, 20*time.Second, out.types...)
			}
			stage = outCorrupt
			if reason := final.Header.Get(bus.HeaderDeadReason); out.stream == s.names.DeadStream() && reason == "" {
				t.Errorf("dead letter on %s without a reason", final.Subject)
			}
			if c.handled {
				res := succeeded(t, final)
				if c.output != nil {
					checkOutput(t, res, *c.output)
				}
			} else if c.code == "" {
				// a dead letter, checked above
			} else if code, msg := codeOf(t, final); code != c.code {
				t.Errorf("code %q (%s), want %q", code, msg, c.code)
			}
			if c.handled {
				out.convIDs, out.runIDs = nil, nil // what a served request keeps is its own
			}
			for _, conv := range out.convIDs {
				var want []string
				if c.keys != nil {
					want = c.keys(conv)
				}
				if got := keys(t, s.m.Res.Conversations, conv); !sameKeys(got, want) {
					t.Errorf("conversation keys of %s: %q, want %q", conv, got, want)
				}
			}
			for _, a := range out.agents {
				if _, listed := s.o.Registry().Lookup(a); listed {
					t.Errorf("the registry lists %s, whose announcement was refused", a)
				}
			}
			for _, run := range out.runIDs {
				got := keys(t, s.m.Res.Runs, run)
				if len(got) > 0 && (c.keys == nil || !sameKeys(got, c.keys(run))) {
					t.Errorf("run keys of %s: %q: a refused run leaves none, or the whole failed run", run, got)
				}
			}
			if t.Failed() {
				return
			}
			stage = outCrash
			s.good(t, c.kind)
		})
	}
}

func sameKeys(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
