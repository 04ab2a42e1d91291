package protocoltest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

var docPath = filepath.Join("..", "..", "docs", "protocol.md")

var names = bus.MustNames(bus.DefaultPrefix)

// example is one fenced block of the document that a marker comment
// (<!-- event mode=binary subject=... -->, <!-- kv bucket=... key=... -->,
// <!-- message kind=cancel subject=... -->) declares checkable.
type example struct {
	kind  string            // event, kv or message
	attrs map[string]string // mode, subject, bucket, key, kind
	line  int               // line of the opening fence
	body  string
}

func (e example) String() string {
	return fmt.Sprintf("%s:%d (%s %v)", docPath, e.line, e.kind, e.attrs)
}

var markerRE = regexp.MustCompile(`^<!--\s*(event|kv|view|message)\s+(.*?)\s*-->\s*$`)

func readDoc(t *testing.T) (string, []example) {
	t.Helper()
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("reading the protocol document: %v", err)
	}
	var (
		out     []example
		pending *example
		inBlock bool
		buf     strings.Builder
	)
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case inBlock && strings.HasPrefix(line, "```"):
			inBlock = false
			if pending != nil {
				pending.body = buf.String()
				out = append(out, *pending)
				pending = nil
			}
		case inBlock:
			buf.WriteString(line)
			buf.WriteByte('\n')
		case strings.HasPrefix(line, "```"):
			inBlock = true
			buf.Reset()
			if pending != nil {
				pending.line = n
			}
		default:
			if m := markerRE.FindStringSubmatch(line); m != nil {
				if pending != nil {
					t.Errorf("%s:%d: marker without a fenced block after it", docPath, pending.line)
				}
				ex := example{kind: m[1], attrs: map[string]string{}, line: n}
				for _, f := range strings.Fields(m[2]) {
					k, v, ok := strings.Cut(f, "=")
					if !ok {
						t.Errorf("%s:%d: marker attribute %q is not key=value", docPath, n, f)
					}
					ex.attrs[k] = v
				}
				pending = &ex
			} else if pending != nil && strings.TrimSpace(line) != "" {
				t.Errorf("%s:%d: a marker must be followed directly by its fenced block", docPath, pending.line)
				pending = nil
			}
		}
	}
	if pending != nil {
		t.Errorf("%s:%d: marker at the end of the document without a block", docPath, pending.line)
	}
	return string(raw), out
}

// message assembles the NATS message an event example describes: in binary
// mode the block is header lines, a blank line and the body; in structured
// mode the block is the body and the Content-Type is the structured one.
func message(t *testing.T, ex example) *nats.Msg {
	t.Helper()
	msg := &nats.Msg{Subject: ex.attrs["subject"], Header: nats.Header{}}
	switch ex.attrs["mode"] {
	case "binary":
		head, body, ok := strings.Cut(ex.body, "\n\n")
		if !ok {
			t.Fatalf("%s: a binary example is header lines, a blank line, then the body", ex)
		}
		for _, l := range strings.Split(head, "\n") {
			k, v, ok := strings.Cut(l, ": ")
			if !ok {
				t.Fatalf("%s: header line %q is not \"Name: value\"", ex, l)
			}
			msg.Header.Add(k, v)
		}
		msg.Data = []byte(strings.TrimRight(body, "\n"))
		if msg.Header.Get("ce-specversion") == "" {
			t.Errorf("%s: a binary example needs the ce-specversion header", ex)
		}
	case "structured":
		msg.Header.Set(bus.HeaderContentType, bus.ContentTypeStructured)
		msg.Data = []byte(ex.body)
	default:
		t.Fatalf("%s: mode must be binary or structured", ex)
	}
	return msg
}

// strict decodes b into v refusing unknown fields, so a field the document
// shows must be one the Go type has.
func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func lastToken(subject string) string { return subject[strings.LastIndexByte(subject, '.')+1:] }

func must(s string, err error) string {
	if err != nil {
		return "invalid: " + err.Error()
	}
	return s
}

// check validates one decoded event against everything the code knows of
// its type: the subject it travels on, its extensions, its data's schema
// and the schemas of the typed values it carries.
func check(ev bus.Event, msg *nats.Msg) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	subject := msg.Subject
	schema := func(name string) {
		if err := schemas.ValidateJSON(name, ev.Data); err != nil {
			fail("data fails %s.schema.json: %v", name, err)
		}
	}
	need := func(exts ...string) {
		for _, x := range exts {
			if ev.Ext(x) == "" {
				fail("the %s extension is missing", x)
			}
		}
	}
	values := func(agent string, vals map[string]schemas.TypedValue) {
		for name, v := range vals {
			if err := schemas.DefaultRegistry().ValidateValue(agent, name, v); err != nil {
				fail("value %q: %v", name, err)
			}
		}
	}
	switch ev.Type {
	case bus.TypeAgentAnnounced:
		schema(schemas.SchemaAnnouncement)
		var a schemas.Announcement
		if err := strict(ev.Data, &a); err != nil {
			fail("data does not decode into schemas.Announcement: %v", err)
		}
		if err := a.Contract.Validate(); err != nil {
			fail("contract: %v", err)
		}
		if want := must(names.Announce(a.Contract.Name)); subject != want {
			fail("subject %s, want %s", subject, want)
		}
	case bus.TypeAgentDeparted:
		schema(schemas.SchemaDeparture)
		var d schemas.Departure
		if err := strict(ev.Data, &d); err != nil {
			fail("data does not decode into schemas.Departure: %v", err)
		}
		if want := must(names.Depart(d.Agent)); subject != want {
			fail("subject %s, want %s", subject, want)
		}
	case bus.TypeAgentRefused:
		schema(schemas.SchemaRefusal)
		var r schemas.AgentRefusal
		if err := strict(ev.Data, &r); err != nil {
			fail("data does not decode into schemas.AgentRefusal: %v", err)
		}
		if want := names.Events(r.Agent, "registry"); subject != want {
			fail("subject %s, want %s", subject, want)
		}
		if !strings.HasPrefix(r.Key, r.Agent+".") || r.Code != schemas.CodeInvalidContract {
			fail("key %q of agent %s, code %q", r.Key, r.Agent, r.Code)
		}
	case bus.TypeTaskRequested:
		schema(schemas.SchemaTask)
		var req schemas.TaskRequest
		if err := strict(ev.Data, &req); err != nil {
			fail("data does not decode into schemas.TaskRequest: %v", err)
		}
		agent := lastToken(subject)
		values(agent, req.Inputs)
		task, dead, call := must(names.Task(agent)), must(names.Dead(agent)), must(names.Call(agent))
		switch subject {
		case task, call:
		case dead:
			for _, h := range []string{agents.HeaderDeadReason, agents.HeaderDeadAgent, agents.HeaderDeadInstance, agents.HeaderDeadDeliveries} {
				if msg.Header.Get(h) == "" {
					fail("a dead-lettered task carries the %s header", h)
				}
			}
		default:
			fail("subject %s, want %s (or %s for a dead letter)", subject, task, dead)
		}
		if err := bus.ValidateToken("task id", ev.ID); err != nil {
			fail("the event id is the task id: %v", err)
		}
		if _, _, err := ev.Deadline(); err != nil {
			fail("%v", err)
		}
	case bus.TypeTaskCompleted, bus.TypeTaskFailed:
		schema(schemas.SchemaResult)
		var res schemas.AgentResult
		if err := strict(ev.Data, &res); err != nil {
			fail("data does not decode into schemas.AgentResult: %v", err)
		}
		values(res.Agent, res.Outputs)
		if res.Success != (ev.Type == bus.TypeTaskCompleted) {
			fail("success %v in a %s event", res.Success, ev.Type)
		}
		need(bus.ExtTaskID)
		agent := names.ResultAgent(subject)
		ok := agent != "" && subject == names.Result(agent, ev.Ext(bus.ExtTaskID))
		for _, id := range []string{ev.Ext(bus.ExtRunID), ev.Ext(bus.ExtConversationID)} {
			ok = ok || (agent != "" && id != "" && subject == names.OrchestratorResult(agent, id))
		}
		if direct := strings.HasPrefix(subject, "_INBOX."); direct {
			// The reply to a direct call: a failure carries micro's error headers.
			code, desc := msg.Header.Get(micro.ErrorCodeHeader), msg.Header.Get(micro.ErrorHeader)
			if _, err := strconv.Atoi(code); !res.Success && (err != nil || res.Error == nil || !strings.HasPrefix(desc, res.Error.Code+": ")) {
				fail("a failed direct reply carries %s (a number) and %s (\"<code>: <message>\"); got %q and %q", micro.ErrorCodeHeader, micro.ErrorHeader, code, desc)
			}
			ok = true
		}
		if !ok {
			fail("subject %s is neither mesh.result.<agent>.%s nor the orchestrator's result subject of the run or conversation, nor a direct call's inbox", subject, ev.Ext(bus.ExtTaskID))
		}
		if id := msg.Header.Get("Nats-Msg-Id"); id != "" && id != "result-"+ev.Ext(bus.ExtTaskID) {
			fail("Nats-Msg-Id %s, want result-%s", id, ev.Ext(bus.ExtTaskID))
		}
	case bus.TypeTaskProgress:
		schema(schemas.SchemaProgress)
		need(bus.ExtTaskID)
		id := ev.Ext(bus.ExtConversationID)
		if id == "" {
			id = ev.Ext(bus.ExtRunID)
		}
		if id == "" {
			id = ev.Ext(bus.ExtTaskID)
		}
		if want := names.Events(id, "task"); subject != want {
			fail("subject %s, want %s", subject, want)
		}
	case bus.TypeChatRequested:
		schema(schemas.SchemaChatRequest)
		if subject != names.ChatRequest() {
			fail("subject %s, want %s", subject, names.ChatRequest())
		}
	case bus.TypeChatProgress, bus.TypeChatResponded:
		if ev.Type == bus.TypeChatResponded {
			schema(schemas.SchemaChatResponse)
			var r schemas.ChatResponse
			if err := strict(ev.Data, &r); err != nil {
				fail("data does not decode into schemas.ChatResponse: %v", err)
			}
		} else {
			schema(schemas.SchemaProgress)
		}
		need(bus.ExtConversationID)
		if want := names.Events(ev.Ext(bus.ExtConversationID), "chat"); subject != want {
			fail("subject %s, want %s", subject, want)
		}
	case bus.TypePipelineSubmitted:
		schema(schemas.SchemaPipeline)
		spec, err := client.ParsePipeline(ev.Data, "json")
		if err != nil {
			fail("%v", err)
		} else if err := spec.Validate(); err != nil {
			fail("%v", err)
		}
		if subject != names.PipelineSubmit() {
			fail("subject %s, want %s", subject, names.PipelineSubmit())
		}
	case bus.TypeForkRequested:
		schema(schemas.SchemaFork)
		var r schemas.ForkRequest
		if err := strict(ev.Data, &r); err != nil {
			fail("data does not decode into schemas.ForkRequest: %v", err)
		} else if err := r.Validate(); err != nil {
			fail("%v", err)
		}
		need(bus.ExtRunID)
		if subject != names.PipelineSubmit() {
			fail("subject %s, want %s", subject, names.PipelineSubmit())
		}
	case bus.TypeResolveRequested:
		schema(schemas.SchemaResolve)
		var r pipelinespec.Resolution
		if err := strict(ev.Data, &r); err != nil {
			fail("data does not decode into pipelinespec.Resolution: %v", err)
		}
		if subject != names.PipelineResolve() {
			fail("subject %s, want %s", subject, names.PipelineResolve())
		}
	case bus.TypeResolveRefused:
		schema(schemas.SchemaResolveRefusal)
		var r pipelinespec.ResolveRefusal
		if err := strict(ev.Data, &r); err != nil {
			fail("data does not decode into pipelinespec.ResolveRefusal: %v", err)
		}
		need(bus.ExtRunID)
		if want := names.Events(r.RunID, "pipeline"); subject != want {
			fail("subject %s, want %s", subject, want)
		}
	case bus.TypeStepStarted, bus.TypeStepCompleted, bus.TypeStepFailed, bus.TypeStepSkipped, bus.TypeStepWaiting:
		schema(schemas.SchemaStepEvent)
		var s schemas.StepEvent
		if err := strict(ev.Data, &s); err != nil {
			fail("data does not decode into schemas.StepEvent: %v", err)
		}
		need(bus.ExtRunID, bus.ExtStepID)
		if s.RunID != ev.Ext(bus.ExtRunID) || s.Step != ev.Ext(bus.ExtStepID) {
			fail("data names run %q step %q, the extensions %q %q", s.RunID, s.Step, ev.Ext(bus.ExtRunID), ev.Ext(bus.ExtStepID))
		}
		if want := names.Events(s.RunID, "pipeline"); subject != want {
			fail("subject %s, want %s", subject, want)
		}
	case bus.TypePipelineCompleted:
		schema(schemas.SchemaRunEvent)
		var r schemas.RunEvent
		if err := strict(ev.Data, &r); err != nil {
			fail("data does not decode into schemas.RunEvent: %v", err)
		}
		need(bus.ExtRunID)
		if want := names.Events(r.RunID, "pipeline"); subject != want {
			fail("subject %s, want %s", subject, want)
		}
	default:
		fail("event type %q is not one the mesh knows", ev.Type)
	}
	return errors.Join(errs...)
}

// eventTypes are every event type of the wire contract; each needs an
// example in binary and in structured mode.
var eventTypes = []string{
	bus.TypeAgentAnnounced, bus.TypeAgentDeparted, bus.TypeAgentRefused,
	bus.TypeTaskRequested, bus.TypeTaskCompleted, bus.TypeTaskFailed, bus.TypeTaskProgress,
	bus.TypeChatRequested, bus.TypeChatProgress, bus.TypeChatResponded,
	bus.TypePipelineSubmitted, bus.TypeStepStarted, bus.TypeStepCompleted,
	bus.TypeStepFailed, bus.TypeStepSkipped, bus.TypePipelineCompleted,
	bus.TypeStepWaiting, bus.TypeResolveRequested, bus.TypeResolveRefused,
	bus.TypeForkRequested,
}

func TestEventExamples(t *testing.T) {
	_, examples := readDoc(t)
	seen := map[string]map[string]bool{}
	n := 0
	for _, ex := range examples {
		if ex.kind != "event" {
			continue
		}
		n++
		msg := message(t, ex)
		ev, err := bus.Decode(msg)
		if err != nil {
			t.Errorf("%s: bus.Decode: %v", ex, err)
			continue
		}
		if err := check(ev, msg); err != nil {
			t.Errorf("%s: %s event: %v", ex, ev.Type, err)
		}
		if seen[ev.Type] == nil {
			seen[ev.Type] = map[string]bool{}
		}
		seen[ev.Type][ex.attrs["mode"]] = true
	}
	if n == 0 {
		t.Fatal("the document has no event examples")
	}
	for _, typ := range eventTypes {
		for _, mode := range []string{"binary", "structured"} {
			if !seen[typ][mode] {
				t.Errorf("%s has no %s-mode example of %s", docPath, mode, typ)
			}
		}
	}
}

// TestCheckerCatchesDrift makes sure the checks can fail: a document whose
// example breaks the contract is reported.
func TestCheckerCatchesDrift(t *testing.T) {
	bad := []struct {
		name    string
		subject string
		event   string
	}{
		{"result without taskid", "mesh.result.t-1", `{"specversion":"1.0","id":"x","source":"s","type":"io.agentmesh.task.completed","data":{"success":true,"agent":"A"}}`},
		{"task on a wrong subject", "mesh.tasks.A", `{"specversion":"1.0","id":"t-1","source":"s","type":"io.agentmesh.task.requested","data":{}}`},
		{"value failing its type", "mesh.task.A", `{"specversion":"1.0","id":"t-1","source":"s","type":"io.agentmesh.task.requested","data":{"inputs":{"t":{"data_type":"TEXT","value":1}}}}`},
		{"unknown field", "mesh.events.r.pipeline", `{"specversion":"1.0","id":"x","source":"s","type":"io.agentmesh.pipeline.completed","runid":"r","data":{"runid":"r","status":"completed","completed":1,"failed":0,"skipped":0,"steps":1,"duration_ms":1,"bogus":1}}`},
		{"chat response with a bad state", "mesh.events.c.chat", `{"specversion":"1.0","id":"x","source":"s","type":"io.agentmesh.chat.responded","conversationid":"c","data":{"conversation_id":"c","output":"","state":"done"}}`},
	}
	for _, b := range bad {
		msg := &nats.Msg{Subject: b.subject, Header: nats.Header{bus.HeaderContentType: {bus.ContentTypeStructured}}, Data: []byte(b.event)}
		ev, err := bus.Decode(msg)
		if err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		if err := check(ev, msg); err == nil {
			t.Errorf("%s: the checker accepted it", b.name)
		}
	}
}

func TestKVAndMessageExamples(t *testing.T) {
	_, examples := readDoc(t)
	kinds := map[string]bool{}
	for _, ex := range examples {
		body := []byte(ex.body)
		switch ex.kind {
		case "kv":
			bucket, key := ex.attrs["bucket"], ex.attrs["key"]
			kinds[bucket] = true
			switch bucket {
			case names.AgentsBucket():
				var a schemas.Announcement
				if err := schemas.ValidateJSON(schemas.SchemaAnnouncement, body); err != nil {
					t.Errorf("%s: %v", ex, err)
				} else if err := strict(body, &a); err != nil {
					t.Errorf("%s: %v", ex, err)
				} else if want := a.Contract.Name + "." + a.Instance.ID; key != want {
					t.Errorf("%s: key %s, want <agent>.<instance> = %s", ex, key, want)
				}
			case names.ConversationsBucket():
				var st schemas.ConversationState
				if err := strict(body, &st); err != nil {
					t.Errorf("%s: does not decode into schemas.ConversationState: %v", ex, err)
					continue
				}
				if st.ID != key {
					t.Errorf("%s: id %q under key %q", ex, st.ID, key)
				}
				for slot, v := range st.Slots {
					if err := schemas.DefaultRegistry().ValidateValue(v.Source, slot, v); err != nil {
						t.Errorf("%s: slot %s: %v", ex, slot, err)
					}
				}
			case names.RunsBucket():
				t.Errorf("%s: the keys of a run are internal; show the assembled run as <!-- view kind=run id=... -->", ex)
			default:
				t.Errorf("%s: unknown bucket %q", ex, bucket)
			}
		case "view":
			switch ex.attrs["kind"] {
			case "run":
				key := ex.attrs["id"]
				kinds[names.RunsBucket()] = true
				var run state.RunState
				if err := strict(body, &run); err != nil {
					t.Errorf("%s: does not decode into state.RunState: %v", ex, err)
					continue
				}
				if run.ID != key || run.State == nil || run.State.ID != key {
					t.Errorf("%s: run id %q (state %v) under id %q", ex, run.ID, run.State, key)
				}
				if err := run.Spec.Validate(); err != nil {
					t.Errorf("%s: spec: %v", ex, err)
				}
				for slot, v := range run.State.Slots {
					if err := schemas.DefaultRegistry().ValidateValue(v.Source, slot, v); err != nil {
						t.Errorf("%s: slot %s: %v", ex, slot, err)
					}
				}
			default:
				t.Errorf("%s: unknown view kind %q", ex, ex.attrs["kind"])
			}
		case "message":
			switch ex.attrs["kind"] {
			case "cancel":
				var c agents.CancelRequest
				if err := strict(body, &c); err != nil || c.TaskID == "" {
					t.Errorf("%s: does not decode into agents.CancelRequest with a taskid: %v", ex, err)
				}
				if want := must(names.Control(lastToken(ex.attrs["subject"]))); ex.attrs["subject"] != want {
					t.Errorf("%s: subject %s, want %s", ex, ex.attrs["subject"], want)
				}
			default:
				t.Errorf("%s: unknown message kind", ex)
			}
		}
	}
	for _, b := range []string{names.AgentsBucket(), names.ConversationsBucket(), names.RunsBucket()} {
		if !kinds[b] {
			t.Errorf("%s has no example value of the %s bucket", docPath, b)
		}
	}
}

// TestDocumentNamesEverything checks that the document names, in code
// quotes or as a section heading, every stream, bucket, extension, error
// code, event type, schema file, routing slot and dead-letter header of the
// code.
func TestDocumentNamesEverything(t *testing.T) {
	doc, _ := readDoc(t)
	want := []string{
		names.RequestsStream(), names.TasksStream(), names.ResultsStream(), names.EventsStream(), names.DeadStream(),
		names.AgentsBucket(), names.ConversationsBucket(), names.RunsBucket(), names.FilesStore(),
		names.RegistryQuery(), names.ChatRequest(), names.PipelineSubmit(), names.PipelineResolve(), names.OrchestratorResults(),
		bus.ExtConversationID, bus.ExtRunID, bus.ExtStepID, bus.ExtTaskID, bus.ExtReplyTo, bus.ExtDeadline, bus.ExtTraceParent,
		schemas.CodeInvalidInput, schemas.CodeInvalidParams, schemas.CodeMalformedEvent, schemas.CodeTimeout,
		schemas.CodeCancelled, schemas.CodeAgentError, schemas.CodeNotFound, schemas.CodeUnavailable, schemas.CodeExhausted,
		agents.HeaderDeadReason, agents.HeaderDeadAgent, agents.HeaderDeadInstance, agents.HeaderDeadDeliveries,
		orchestrator.DurableName, route.SlotImageIDs, route.SlotDocumentIDs, route.SlotLinkIDs,
		route.SlotFileIDs, route.SlotCategorization, route.SlotAnalysis, route.SlotText,
		route.SlotCrossRef, "Nats-TTL", "Nats-Msg-Id", "collections/",
	}
	want = append(want, eventTypes...)
	for _, name := range schemas.SchemaNames() {
		want = append(want, name+".schema.json")
	}
	for _, w := range want {
		if !strings.Contains(doc, "`"+w+"`") && !strings.Contains(doc, "\n### "+w+"\n") {
			t.Errorf("%s does not name `%s`", docPath, w)
		}
	}
	if !strings.Contains(doc, "\n## Deviations from the design brief\n") {
		t.Errorf("%s has no \"## Deviations from the design brief\" section", docPath)
	}
}
