package badinput

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/summarize"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// shared is one mesh for the whole catalogue: cases use ids of their own.
type shared struct {
	m     *meshtest.Mesh
	o     *orchestrator.Orchestrator
	js    jetstream.JetStream
	names bus.Names
	seq   atomic.Int64
	surfaces
}

func newShared(t *testing.T) *shared {
	t.Helper()
	m := meshtest.New(t)
	m.Run(t, text.New())
	files := resolvers.NewObjectStore(m.Res.Files)
	sum, err := summarize.New(files)
	if err != nil {
		t.Fatal(err)
	}
	m.Run(t, sum, agents.WithValueResolver(resolvers.NewCollections(m.Res.Files, 0)))
	// The model answers every turn at once: the catalogue is about what
	// happens around it.
	model := llmtest.New(t)
	model.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Answer("done") })
	llmc, err := llm.New(model.Config())
	if err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(m.Srv.Conn(t), orchestrator.WithOrphanGrace(300*time.Millisecond), orchestrator.WithSweepInterval(100*time.Millisecond), orchestrator.WithChat(chat.WithLLM(llmc)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- o.RunReady(ctx, func() { close(ready) }) }()
	t.Cleanup(func() { cancel(); <-done })
	<-ready
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	for _, a := range []string{text.Name, summarize.Name} {
		if err := o.Registry().Wait(wctx, a, 1); err != nil {
			t.Fatal(err)
		}
	}
	s := &shared{m: m, o: o, js: m.Srv.JetStream(t), names: m.Srv.Names()}
	s.surfaces = startSurfaces(t, m)
	return s
}

// id returns a fresh id with prefix p.
func (s *shared) id(p string) string { return fmt.Sprintf("%s-%d", p, s.seq.Add(1)) }

// event builds a binary-mode message of a CloudEvent on subject.
func event(t *testing.T, subject, typ, id string, data any, ext map[string]string) *nats.Msg {
	t.Helper()
	ev, err := bus.NewEvent(typ, "badinput", data)
	if err != nil {
		t.Fatal(err)
	}
	ev.ID = id
	for k, v := range ext {
		ev.SetExt(k, v)
	}
	msg, err := bus.Encode(subject, ev)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// raw builds a message with the given headers (name, value pairs) and body.
func raw(subject, body string, headers ...string) *nats.Msg {
	m := nats.NewMsg(subject)
	for i := 0; i+1 < len(headers); i += 2 {
		m.Header.Set(headers[i], headers[i+1])
	}
	m.Data = []byte(body)
	return m
}

// publish stores msg in its stream, as a sender would.
func (s *shared) publish(t *testing.T, msg *nats.Msg) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.js.PublishMsg(ctx, msg); err != nil {
		t.Fatalf("publish on %s: %v", msg.Subject, err)
	}
}

// final waits for the first message on subject in stream whose event type
// is one of types (any message when types is empty) and returns it.
func (s *shared) final(t *testing.T, stream, subject string, within time.Duration, types ...string) *nats.Msg {
	t.Helper()
	return s.finalMatching(t, stream, subject, within, func(msg *nats.Msg) bool {
		if len(types) == 0 {
			return true
		}
		ev, err := bus.Decode(msg)
		return err == nil && contains(types, ev.Type)
	})
}

// finalMatching waits for the first message on subject in stream that
// match accepts and returns it.
func (s *shared) finalMatching(t *testing.T, stream, subject string, within time.Duration, match func(*nats.Msg) bool) *nats.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cons, err := s.js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if errors.Is(err, jetstream.ErrOrderedConsumerReset) {
			continue
		}
		if err != nil {
			t.Fatalf("nothing on %s within %s: %v", subject, within, err)
		}
		msg := &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}
		if match(msg) {
			return msg
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// codeOf reads the error code of a final event: a chat answer, a run's end
// or a task's result.
func codeOf(t *testing.T, msg *nats.Msg) (code, message string) {
	t.Helper()
	if reason := msg.Header.Get(bus.HeaderDeadReason); reason != "" {
		return msg.Header.Get(bus.HeaderDeadCode), reason // a refusal on a dead-letter subject
	}
	ev, err := bus.Decode(msg)
	if err != nil {
		t.Fatalf("final event on %s does not decode: %v", msg.Subject, err)
	}
	switch ev.Type {
	case bus.TypeChatResponded:
		var r schemas.ChatResponse
		if err := ev.DataAs(&r); err != nil {
			t.Fatal(err)
		}
		if r.State != schemas.ChatFailed {
			t.Fatalf("chat answer on %s is %s, not failed: %s", msg.Subject, r.State, r.Output)
		}
		return r.Code, r.Error
	case bus.TypePipelineCompleted:
		var r schemas.RunEvent
		if err := ev.DataAs(&r); err != nil {
			t.Fatal(err)
		}
		if r.Status != schemas.RunFailed {
			t.Fatalf("run on %s is %s, not failed", msg.Subject, r.Status)
		}
		return r.Code, r.Error
	case bus.TypeAgentRefused:
		var r schemas.AgentRefusal
		if err := ev.DataAs(&r); err != nil {
			t.Fatal(err)
		}
		return r.Code, r.Error
	case bus.TypeTaskFailed, bus.TypeTaskCompleted:
		var r schemas.AgentResult
		if err := ev.DataAs(&r); err != nil {
			t.Fatal(err)
		}
		if r.Success || r.Error == nil {
			t.Fatalf("task result on %s succeeded", msg.Subject)
		}
		return r.Error.Code, r.Error.Message
	}
	t.Fatalf("unexpected final event %s on %s", ev.Type, msg.Subject)
	return "", ""
}

// keys lists the keys of bucket kv that start with id (id itself, id.chat,
// id.spec, ...).
func keys(t *testing.T, kv jetstream.KeyValue, id string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lister, err := kv.ListKeysFiltered(ctx, id, id+".>")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range lister.Keys() {
		out = append(out, k)
	}
	return out
}

// good sends a good request of kind and checks it is served.
func (s *shared) good(t *testing.T, kind string) {
	t.Helper()
	switch kind {
	case "chat":
		conv := s.id("good-chat")
		s.publish(t, event(t, s.names.ChatRequest(), bus.TypeChatRequested, conv, schemas.ChatRequest{Message: "make this text upper case: hello"}, nil))
		ev, _ := bus.Decode(s.final(t, s.names.EventsStream(), s.names.Events(conv, "chat"), 20*time.Second, bus.TypeChatResponded))
		var r schemas.ChatResponse
		if err := ev.DataAs(&r); err != nil || r.State != schemas.ChatCompleted {
			t.Fatalf("the next good chat request was not served: %+v %v", r, err)
		}
	case "pipeline":
		run := s.id("good-run")
		spec := pipelinespec.PipelineSpec{Name: "good", Steps: []pipelinespec.PipelineStep{{ID: "up", Agent: text.Name, Inputs: map[string]string{"text": "text:hello"}}}}
		s.publish(t, event(t, s.names.PipelineSubmit(), bus.TypePipelineSubmitted, run, spec, map[string]string{bus.ExtRunID: run}))
		ev, _ := bus.Decode(s.final(t, s.names.EventsStream(), s.names.Events(run, "pipeline"), 20*time.Second, bus.TypePipelineCompleted))
		var r schemas.RunEvent
		if err := ev.DataAs(&r); err != nil || r.Status != schemas.RunCompleted {
			t.Fatalf("the next good pipeline was not served: %+v %v", r, err)
		}
	case "registry":
		s.goodAnnouncement(t)
	case "http", "a2a", "mcp":
		s.goodCall(t, kind)
	case "task":
		id := s.id("good-task")
		subj, _ := s.names.Task(text.Name)
		s.publish(t, event(t, subj, bus.TypeTaskRequested, id, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("hello", "t")}}, nil))
		ev, _ := bus.Decode(s.final(t, s.names.ResultsStream(), s.names.Result(text.Name, id), 20*time.Second))
		var r schemas.AgentResult
		if err := ev.DataAs(&r); err != nil || !r.Success {
			t.Fatalf("the next good task was not served: %+v %v", r, err)
		}
	}
}

// mustJSON encodes v.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var _ = strings.Repeat
