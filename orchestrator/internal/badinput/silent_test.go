package badinput

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// Inputs a probe once sent that nobody answered. Each is sent as a plain
// nats.go client would (headers and body by hand, no library of the
// mesh's), and each must end with a coded answer its sender can find: on
// the subject it computes, or, where its request names no id that can be
// a subject token, on the refusal subject of where it sent it
// (mesh.dead.<agent> for mesh.task.<agent>, mesh.dead.orchestrator for
// the orchestrator's subjects), matched by the stream sequence its
// publish was acknowledged with.
func silentCases() []badCase {
	var cs []badCase
	ce := func(id string) []string {
		return []string{"ce-specversion", "1.0", "ce-id", id, "ce-source", "plain", "ce-type", bus.TypeTaskRequested}
	}
	textBody := mustJSON(textTask("hello", nil))
	// A task on mesh.task.TextAgent whose answer is on
	// mesh.result.TextAgent.<id>.
	answered := func(name, body string, headers func(id string) []string, code string) {
		cs = append(cs, badCase{name: "silent/task " + name, kind: "task", code: code,
			send: func(t *testing.T, s *shared, id string) sent {
				subj, _ := s.names.Task(text.Name)
				return sent{msg: raw(subj, body, headers(id)...), stream: s.names.ResultsStream(), answer: s.names.Result(text.Name, id)}
			}})
	}
	answered("with an empty body", "", ce, schemas.CodeInvalidInput)
	answered("with an empty JSON body", "", func(id string) []string { return append(ce(id), "Content-Type", "application/json") }, schemas.CodeInvalidInput)
	// A task whose id cannot be a subject token: refused on
	// mesh.dead.TextAgent.
	refused := func(name, body string, headers []string) {
		cs = append(cs, badCase{name: "silent/task " + name, kind: "task", code: schemas.CodeMalformedEvent,
			send: func(t *testing.T, s *shared, id string) sent {
				subj, _ := s.names.Task(text.Name)
				dead, _ := s.names.Dead(text.Name)
				return sent{msg: raw(subj, body, headers...), stream: s.names.DeadStream(), answer: dead, bySequence: true}
			}})
	}
	refused("with no headers and an empty body", "", nil)
	refused("with no headers", textBody, nil)
	refused("in structured mode whose id is a number", `{"specversion":"1.0","id":5,"source":"plain","type":"`+bus.TypeTaskRequested+`","data":`+textBody+`}`,
		[]string{"Content-Type", "application/cloudevents+json"})
	// An empty id; the other ids that cannot be a subject token: idCases.
	refused("whose id is empty", textBody, ce(""))

	// A chat request whose conversationid extension names another
	// conversation than its data: refused where either says.
	for _, where := range []string{"extension", "data"} {
		cs = append(cs, badCase{name: "silent/chat conversationid extension not the data's, read on the " + where + "'s", kind: "chat", code: schemas.CodeMalformedEvent,
			send: func(t *testing.T, s *shared, id string) sent {
				ext, data := id+"-ext", id+"-data"
				msg := raw(s.names.ChatRequest(), mustJSON(schemas.ChatRequest{ConversationID: data, Message: "hello"}),
					"ce-specversion", "1.0", "ce-id", s.id("req"), "ce-source", "plain", "ce-type", bus.TypeChatRequested,
					"ce-conversationid", ext, "Content-Type", "application/json")
				read := ext
				if where == "data" {
					read = data
				}
				out := s.chatSent(msg, read)
				out.convIDs = []string{ext, data}
				return out
			}})
	}
	cs = append(cs, badCase{name: "silent/chat message not UTF-8", kind: "chat", code: schemas.CodeMalformedEvent,
		send: func(t *testing.T, s *shared, id string) sent {
			msg := raw(s.names.ChatRequest(), `{"conversation_id":"`+id+`","message":"caf`+"\xe9 \xff\xfe"+`"}`,
				"ce-specversion", "1.0", "ce-id", id, "ce-source", "plain", "ce-type", bus.TypeChatRequested, "Content-Type", "application/json")
			return s.chatSent(msg, id)
		}})

	cs = append(cs, badCase{name: "silent/chat message not UTF-8, no conversation id", kind: "chat", code: schemas.CodeMalformedEvent,
		send: func(t *testing.T, s *shared, id string) sent {
			msg := raw(s.names.ChatRequest(), `{"message":"`+"\xff\xfe"+` hello"}`,
				"ce-specversion", "1.0", "ce-id", id, "ce-source", "plain", "ce-type", bus.TypeChatRequested, "Content-Type", "application/json")
			return s.chatSent(msg, id)
		}})
	cs = append(cs, badCase{name: "silent/chat structured, message not UTF-8", kind: "chat", code: schemas.CodeMalformedEvent,
		send: func(t *testing.T, s *shared, id string) sent {
			msg := raw(s.names.ChatRequest(), `{"specversion":"1.0","id":"`+id+`","source":"plain","type":"`+bus.TypeChatRequested+`","datacontenttype":"application/json","data":{"message":"`+"\xff\xfe"+` hello"}}`,
				"Content-Type", "application/cloudevents+json")
			return s.chatSent(msg, id)
		}})
	cs = append(cs, badCase{name: "silent/chat event id not UTF-8", kind: "chat", code: schemas.CodeMalformedEvent,
		send: func(t *testing.T, s *shared, id string) sent {
			msg := raw(s.names.ChatRequest(), `{"message":"hello"}`,
				"ce-specversion", "1.0", "ce-id", id+"\xff", "ce-source", "plain", "ce-type", bus.TypeChatRequested, "Content-Type", "application/json")
			return sent{msg: msg, stream: s.names.DeadStream(), answer: s.names.DeadAll()[:len(s.names.DeadAll())-1] + "orchestrator", bySequence: true}
		}})

	// Requests to the orchestrator with no id to answer on: refused on
	// mesh.dead.orchestrator.
	orch := func(name string, subject func(s *shared) string, body string, headers []string, code string) {
		cs = append(cs, badCase{name: "silent/" + name, kind: "pipeline", code: code,
			send: func(t *testing.T, s *shared, id string) sent {
				return sent{msg: raw(subject(s), body, headers...), stream: s.names.DeadStream(),
					answer: s.names.DeadAll()[:len(s.names.DeadAll())-1] + "orchestrator", bySequence: true}
			}})
	}
	submitSubj := func(s *shared) string { return s.names.PipelineSubmit() }
	resolveSubj := func(s *shared) string { return s.names.PipelineResolve() }
	orch("submission with no headers and an empty body", submitSubj, "", nil, schemas.CodeMalformedEvent)
	orch("submission whose run id and event id have dots", submitSubj, mustJSON(pipe(step("a", text.Name, upText, nil))),
		[]string{"ce-specversion", "1.0", "ce-id", "s.1", "ce-source", "plain", "ce-type", bus.TypePipelineSubmitted, "ce-runid", "r.1", "Content-Type", "application/json"}, schemas.CodeInvalidID)
	orch("resolve with no headers", resolveSubj, `{"run_id":"r","step":"a","approved":true}`, nil, schemas.CodeMalformedEvent)

	// Registry values put straight into the bucket.
	reg := func(name string, key func(agent string) string, value func(agent string) []byte) {
		cs = append(cs, badCase{name: "silent/registry " + name, kind: "registry", code: schemas.CodeInvalidContract,
			send: func(t *testing.T, s *shared, id string) sent {
				a := agentName(id)
				msg := &nats.Msg{Subject: "$KV." + s.names.AgentsBucket() + "." + key(a), Data: value(a), Header: nats.Header{}}
				return sent{msg: msg, stream: s.names.EventsStream(), answer: s.names.Events(a, "registry"),
					types: []string{bus.TypeAgentRefused}, agents: []string{a}}
			}})
	}
	instance := func(a string) string { return a + ".i1" }
	bare := func(a string) string { return a }
	valid := func(a string) []byte { return []byte(mustJSON(announcement(a))) }
	reg("key without an instance part", bare, valid)
	reg("key without an instance part, value not JSON", bare, func(string) []byte { return []byte("hello") })
	reg("value empty", instance, func(string) []byte { return nil })
	reg("value an empty object", instance, func(string) []byte { return []byte(`{}`) })
	reg("value without a contract", instance, func(string) []byte { return []byte(`{"instance":{"id":"i1","concurrency":1}}`) })
	reg("value a JSON string", instance, func(string) []byte { return []byte(`"hello"`) })
	reg("value null", instance, func(string) []byte { return []byte(`null`) })
	return cs
}

// deadFor matches the dead letter of the message a sender published and
// got ack for: the refusal names the stream and sequence it was stored at.
func deadFor(ack stored) func(*nats.Msg) bool {
	return func(m *nats.Msg) bool {
		return m.Header.Get(bus.HeaderDeadStream) == ack.stream && m.Header.Get(bus.HeaderDeadSequence) == strconv.FormatUint(ack.seq, 10)
	}
}

// stored is where a publish was stored.
type stored struct {
	stream string
	seq    uint64
}

// publishAck stores msg as a sender would and returns where it went.
func (s *shared) publishAck(t *testing.T, msg *nats.Msg) stored {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ack, err := s.js.PublishMsg(ctx, msg)
	if err != nil {
		t.Fatalf("publish on %s: %v", msg.Subject, err)
	}
	return stored{stream: ack.Stream, seq: ack.Sequence}
}
