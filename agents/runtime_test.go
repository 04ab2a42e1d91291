package agents_test

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
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/schemas"
)

// echo upper-cases its text input and reports progress.
func echo(name string) agents.Agent {
	return agents.Func(schemas.AgentContract{
		Name: name, Version: "1.2.3", Capability: schemas.CapTransformation, Description: "echoes text in upper case",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		s, err := ec.Text("text")
		if err != nil {
			return schemas.AgentResult{}, err
		}
		agents.ReportProgress(ctx, "upper-casing", 50)
		return schemas.AgentResult{Success: true, Summary: "ok",
			Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue(strings.ToUpper(s), name)}}, nil
	})
}

// blocker waits until its ctx ends, signalling started tasks.
func blocker(name string, started chan<- string) agents.Agent {
	return agents.Func(schemas.AgentContract{
		Name: name, Capability: schemas.CapEvaluation, Description: "blocks until cancelled",
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		started <- ec.Instruction()
		<-ctx.Done()
		return schemas.AgentResult{}, ctx.Err()
	})
}

func TestRuntimeRoundTrip(t *testing.T) {
	m := newMesh(t)
	rt := m.serve(t, echo("Echo"), agents.WithInstanceID("echo-1"), agents.WithVersion("test"))
	if rt.InstanceID() != "echo-1" {
		t.Fatalf("InstanceID = %q", rt.InstanceID())
	}

	progress, err := m.nc.SubscribeSync(m.n.Events("conv1", "task"))
	if err != nil {
		t.Fatal(err)
	}
	ev := task(t, schemas.TaskRequest{Inputs: textIn("hello")},
		bus.ExtConversationID, "conv1", bus.ExtStepID, "s1", bus.ExtTraceParent, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	r := m.call(t, "Echo", ev)
	if !r.Result.Success || r.Event.Type != bus.TypeTaskCompleted {
		t.Fatalf("result = %+v (%s); want success", r.Result, r.Event.Type)
	}
	if got, _ := r.Result.Outputs["text"].Text(); got != "HELLO" {
		t.Errorf("output = %q; want HELLO", got)
	}
	if r.Result.Agent != "Echo" || r.Result.Capability != schemas.CapTransformation || r.Result.Metrics.Attempt != 1 {
		t.Errorf("bookkeeping = agent %q capability %q attempt %d; want Echo TRANSFORMATION 1", r.Result.Agent, r.Result.Capability, r.Result.Metrics.Attempt)
	}
	for k, want := range map[string]string{bus.ExtTaskID: ev.ID, bus.ExtConversationID: "conv1", bus.ExtStepID: "s1", bus.ExtTraceParent: ev.Ext(bus.ExtTraceParent)} {
		if got := r.Event.Ext(k); got != want {
			t.Errorf("result extension %s = %q; want %q", k, got, want)
		}
	}
	if !strings.HasSuffix(r.Event.Source, "/Echo/echo-1") {
		t.Errorf("result source %q does not name the instance", r.Event.Source)
	}
	pm, err := progress.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no progress event on mesh.events.conv1.task: %v", err)
	}
	pev, _ := bus.Decode(pm)
	var p schemas.TaskProgress
	_ = json.Unmarshal(pev.Data, &p)
	if pev.Type != bus.TypeTaskProgress || p.TaskID != ev.ID || p.Message != "upper-casing" || p.Percent != 50 {
		t.Errorf("progress = %s %+v; want the task's progress", pev.Type, p)
	}

	// The result is also in MESH_RESULTS, once.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := m.res.Results.GetLastMsgForSubject(ctx, m.n.Result("Echo", ev.ID)); err != nil {
		t.Errorf("result not in MESH_RESULTS: %v", err)
	}

	// Registry: the KV key, the query reply and the micro service.
	entry, err := m.res.Agents.Get(ctx, "Echo.echo-1")
	if err != nil {
		t.Fatalf("registry key Echo.echo-1: %v", err)
	}
	var ann schemas.Announcement
	if err := json.Unmarshal(entry.Value(), &ann); err != nil || ann.Contract.Name != "Echo" || ann.Instance.Version != "test" || ann.Instance.Concurrency != agents.DefaultConcurrency {
		t.Errorf("registry value = %+v, %v", ann, err)
	}
	reply, err := m.nc.Request(m.n.RegistryQuery(), nil, 2*time.Second)
	if err != nil {
		t.Fatalf("registry query: %v", err)
	}
	qev, err := bus.Decode(reply)
	if err != nil || qev.Type != bus.TypeAgentAnnounced || !strings.Contains(string(qev.Data), `"Echo"`) {
		t.Errorf("query reply = %s %s, %v", qev.Type, qev.Data, err)
	}
	ping, err := m.nc.Request("$SRV.PING.Echo", nil, 2*time.Second)
	if err != nil || !strings.Contains(string(ping.Data), `"version":"1.2.3"`) {
		t.Errorf("$SRV.PING.Echo = %v, %v", ping, err)
	}
}

func TestRuntimeRejectsInvalidInputs(t *testing.T) {
	m := newMesh(t)
	a := agents.Func(schemas.AgentContract{
		Name: "Sorter", Capability: schemas.CapOrganization, Description: "sorts images",
		Inputs: []schemas.TypedInput{{Name: "images", DataType: schemas.TypeFileIDs, Required: true, ContentTypeHint: schemas.ContentImages}},
		Params: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
	}, func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
		return schemas.AgentResult{Success: true, Summary: "sorted"}, nil
	})
	m.serve(t, a)
	images := schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, "a", "b"), "test")
	docs := schemas.FilesValue(schemas.FromIDs(schemas.ContentDocuments, "a"), "test")
	bad := schemas.TypedValue{DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages, Value: json.RawMessage(`{"ids":"not-a-list"}`)}
	for _, tc := range []struct {
		name      string
		req       schemas.TaskRequest
		code      string
		fragments []string
	}{
		{"missing", schemas.TaskRequest{}, schemas.CodeInvalidInput, []string{`"images"`, "FILE_IDS", "required but missing"}},
		{"wrong type", schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"images": schemas.TextValue("x", "t")}}, schemas.CodeInvalidInput, []string{`"images"`, "TEXT", "FILE_IDS"}},
		{"wrong hint", schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"images": docs}}, schemas.CodeInvalidInput, []string{`"images"`, "documents", "images"}},
		{"type schema", schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"images": bad}}, schemas.CodeInvalidInput, []string{`"images"`, "FILE_IDS", "ids"}},
		{"undeclared", schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"images": images, "extra": schemas.TextValue("x", "t")}}, schemas.CodeInvalidInput, []string{`"extra"`, "TEXT", "not declared"}},
		{"params", schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"images": images}, Params: map[string]any{"n": "three"}}, schemas.CodeInvalidParams, []string{"params", "n"}},
		// A budget's ledger outside the waves' keys (the declared rate
		// limits) is never written by the agent's model calls.
		{"budget key", schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"images": images}, Budget: &schemas.Budget{Tokens: 100}, BudgetKey: "config.limits"},
			schemas.CodeInvalidRequest, []string{"budget_key", `"config.limits"`, "budget.run.<run>.w<wave>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantFailure(t, m.call(t, "Sorter", task(t, tc.req)), tc.code, tc.fragments...)
		})
	}
	// The agent keeps serving.
	if r := m.call(t, "Sorter", task(t, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"images": images}})); !r.Result.Success {
		t.Fatalf("valid task after invalid ones: %+v", r.Result)
	}
}

func TestRuntimeMalformedEvents(t *testing.T) {
	m := newMesh(t)
	m.serve(t, echo("Echo"))
	subj, _ := m.n.Task("Echo")
	replies, err := m.nc.SubscribeSync("mesh.result.Echo.replies.>")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pub := func(msg *nats.Msg) {
		t.Helper()
		msg.Subject = subj
		if _, err := m.js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	structured := func(body string) *nats.Msg {
		msg := nats.NewMsg(subj)
		msg.Header.Set("Content-Type", "application/cloudevents+json")
		msg.Data = []byte(body)
		return msg
	}

	// Answered on replyto: missing type; wrong specversion; missing id and source.
	noType := nats.NewMsg(subj)
	noType.Header.Set("ce-specversion", "1.0")
	noType.Header.Set("ce-id", "t-notype")
	noType.Header.Set("ce-source", "/test")
	noType.Header.Set("ce-replyto", "mesh.result.Echo.replies.notype")
	noType.Data = []byte(`{}`)
	pub(noType)
	pub(structured(`{"specversion":"0.3","id":"t-old","source":"/test","type":"io.agentmesh.task.requested","replyto":"mesh.result.Echo.replies.old","data":{}}`))
	pub(structured(`{"specversion":"1.0","type":"io.agentmesh.task.requested","replyto":"mesh.result.Echo.replies.noid","data":{}}`))
	want := map[string][]string{
		"mesh.result.Echo.replies.notype": {"type"},
		"mesh.result.Echo.replies.old":    {"specversion", "0.3"},
		"mesh.result.Echo.replies.noid":   {"id", "source"},
	}
	for range want {
		msg, err := replies.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("missing answer to a malformed task: %v (still waiting for %v)", err, want)
		}
		frags, ok := want[msg.Subject]
		if !ok {
			t.Fatalf("unexpected answer on %s", msg.Subject)
		}
		delete(want, msg.Subject)
		wantFailure(t, decodeResult(t, msg), schemas.CodeMalformedEvent, frags...)
	}

	// No reply subject known: dead-lettered with the reason.
	pub(structured(`{"specversion":"1.0", "id": "broken`))
	plain := nats.NewMsg(subj)
	plain.Data = []byte("just some bytes")
	pub(plain)
	dead, err := m.js.OrderedConsumer(ctx, m.n.DeadStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{m.n.DeadAll()}})
	if err != nil {
		t.Fatal(err)
	}
	// Tasks run concurrently, so the two dead letters may arrive in either order.
	wantDead := map[string]bool{`{"specversion":"1.0", "id": "broken`: true, "just some bytes": true}
	for i := range 2 {
		msg, err := dead.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatalf("dead letter %d: %v (still waiting for %v)", i, err, wantDead)
		}
		if !wantDead[string(msg.Data())] {
			t.Errorf("dead letter %d body = %q; want one of %v", i, msg.Data(), wantDead)
		}
		delete(wantDead, string(msg.Data()))
		if msg.Subject() != "mesh.dead.Echo" || !strings.Contains(msg.Headers().Get(agents.HeaderDeadReason), "malformed") {
			t.Errorf("dead letter %d on %s with reason %q", i, msg.Subject(), msg.Headers().Get(agents.HeaderDeadReason))
		}
	}

	// The agent keeps serving.
	if r := m.call(t, "Echo", task(t, schemas.TaskRequest{Inputs: textIn("still here")})); !r.Result.Success {
		t.Fatalf("valid task after malformed ones: %+v", r.Result)
	}
}

func TestRuntimeDeadline(t *testing.T) {
	m := newMesh(t)
	started := make(chan string, 10)
	m.serve(t, blocker("Slow", started))

	r := m.call(t, "Slow", task(t, schemas.TaskRequest{TimeoutMS: 150}))
	wantFailure(t, r, schemas.CodeTimeout, "timeout_ms 150")
	if r.Result.Metrics.DurationMS < 150 {
		t.Errorf("timed out after %dms; the budget was 150ms", r.Result.Metrics.DurationMS)
	}

	ev := task(t, schemas.TaskRequest{}, bus.ExtDeadline, time.Now().Add(200*time.Millisecond).UTC().Format(time.RFC3339Nano))
	wantFailure(t, m.call(t, "Slow", ev), schemas.CodeTimeout, "deadline")

	past := task(t, schemas.TaskRequest{Instruction: "never"}, bus.ExtDeadline, time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
	wantFailure(t, m.call(t, "Slow", past), schemas.CodeTimeout, "before it started")
	for len(started) > 0 {
		if got := <-started; got == "never" {
			t.Error("a task past its deadline was executed")
		}
	}
}

func TestRuntimeCancel(t *testing.T) {
	m := newMesh(t)
	started := make(chan string, 1)
	m.serve(t, blocker("Slow", started))
	ev := task(t, schemas.TaskRequest{Instruction: "wait"})
	sub, err := m.nc.SubscribeSync(m.n.Result("Slow", ev.ID))
	if err != nil {
		t.Fatal(err)
	}
	m.publish(t, "Slow", ev)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("task never started")
	}
	control, _ := m.n.Control("Slow")
	ack, err := m.nc.Request(control, []byte(fmt.Sprintf(`{"taskid":%q}`, ev.ID)), 5*time.Second)
	if err != nil || !strings.Contains(string(ack.Data), `"cancelled":true`) {
		t.Fatalf("cancel request: %v %v", ack, err)
	}
	wantFailure(t, next(t, sub), schemas.CodeCancelled, ev.ID)
}

// A task published by hand as structured JSON with a plain NATS publish is
// executed; its result is read back from MESH_RESULTS.
func TestRuntimeHandPublishedStructuredTask(t *testing.T) {
	m := newMesh(t)
	m.serve(t, echo("Echo"))
	body := `{"specversion":"1.0","id":"hand-1","source":"/nats-cli","type":"io.agentmesh.task.requested",
	  "datacontenttype":"application/json",
	  "data":{"inputs":{"text":{"data_type":"TEXT","value":"by hand"}}}}`
	if err := m.nc.Publish("mesh.task.Echo", []byte(body)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var raw *jetstream.RawStreamMsg
	var err error
	if !fixture.Until(ctx.Done(), func() bool {
		raw, err = m.res.Results.GetLastMsgForSubject(ctx, "mesh.result.Echo.hand-1")
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Fatalf("reading mesh.result.Echo.hand-1 from MESH_RESULTS: %v", err)
		}
		return err == nil
	}) {
		t.Fatalf("reading mesh.result.Echo.hand-1 from MESH_RESULTS: %v", err)
	}
	// Read it as a plain client would: ce- headers and a JSON body.
	if raw.Header.Get("ce-type") != bus.TypeTaskCompleted || raw.Header.Get("ce-taskid") != "hand-1" {
		t.Errorf("result headers = %v", raw.Header)
	}
	var res struct {
		Success bool `json:"success"`
		Outputs map[string]struct {
			Value string `json:"value"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(raw.Data, &res); err != nil || !res.Success || res.Outputs["text"].Value != "BY HAND" {
		t.Fatalf("result = %s (%v)", raw.Data, err)
	}
}

func TestRuntimeRetriesThenDeadLetters(t *testing.T) {
	m := newMesh(t)
	var calls atomic.Int32
	a := agents.Func(schemas.AgentContract{Name: "Flaky", Capability: schemas.CapAnalysis, Description: "fails until its third attempt, or always"},
		func(_ context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			n := calls.Add(1)
			if ec.Instruction() == "recover" && n >= 2 {
				return schemas.AgentResult{Success: true}, nil
			}
			if n%2 == 0 { // both ways of asking for a retry
				return schemas.Failure("Flaky", "busy", "upstream busy", true), nil
			}
			return schemas.AgentResult{}, agents.Retryable(errors.New("upstream down"))
		})
	m.serve(t, a, agents.WithMaxDeliver(3), agents.WithBackoff(10*time.Millisecond, 20*time.Millisecond))

	r := m.call(t, "Flaky", task(t, schemas.TaskRequest{Instruction: "recover"}))
	if !r.Result.Success || r.Result.Metrics.Attempt != 2 {
		t.Fatalf("result after one retry = %+v; want success on attempt 2", r.Result)
	}

	calls.Store(0)
	ev := task(t, schemas.TaskRequest{Instruction: "never"})
	r = m.call(t, "Flaky", ev)
	wantFailure(t, r, schemas.CodeExhausted, "3 deliveries", "upstream down")
	if calls.Load() != 3 || r.Result.Metrics.Attempt != 3 {
		t.Errorf("executed %d times, attempt %d; want 3 and 3", calls.Load(), r.Result.Metrics.Attempt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dead, err := m.res.Dead.GetLastMsgForSubject(ctx, "mesh.dead.Flaky")
	if err != nil {
		t.Fatalf("no dead letter: %v", err)
	}
	if dead.Header.Get("ce-id") != ev.ID || !strings.Contains(dead.Header.Get(agents.HeaderDeadReason), "upstream down") || dead.Header.Get(agents.HeaderDeadDeliveries) != "3" {
		t.Errorf("dead letter headers = %v", dead.Header)
	}
}

// A second copy of a finished task (same event id) is acked, not executed.
func TestRuntimeSkipsFinishedTask(t *testing.T) {
	m := newMesh(t)
	var calls atomic.Int32
	a := agents.Func(schemas.AgentContract{Name: "Once", Capability: schemas.CapAnalysis, Description: "counts calls"},
		func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
			calls.Add(1)
			return schemas.AgentResult{Success: true}, nil
		})
	m.serve(t, a, agents.WithConcurrency(1))
	ev := task(t, schemas.TaskRequest{})
	m.call(t, "Once", ev)
	m.publish(t, "Once", ev)
	marker := m.call(t, "Once", task(t, schemas.TaskRequest{})) // served after the copy: one instance, one at a time
	if !marker.Result.Success {
		t.Fatal(marker.Result)
	}
	if calls.Load() != 2 {
		t.Fatalf("executed %d times; want 2 (the copy of a finished task is skipped)", calls.Load())
	}
}

func TestRuntimeDrain(t *testing.T) {
	m := newMesh(t)
	gate := make(chan struct{})
	started := make(chan struct{}, 3)
	a := agents.Func(schemas.AgentContract{Name: "Drainer", Capability: schemas.CapAnalysis, Description: "waits for a gate"},
		func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
			started <- struct{}{}
			<-gate
			return schemas.AgentResult{Success: true, Summary: "finished"}, nil
		})
	rt, stop := m.start(t, a, agents.WithConcurrency(3), agents.WithInstanceID("d1"))
	departures, err := m.nc.SubscribeSync("mesh.registry.depart.Drainer")
	if err != nil {
		t.Fatal(err)
	}
	results, err := m.nc.SubscribeSync("mesh.result.>")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		m.publish(t, "Drainer", task(t, schemas.TaskRequest{}))
	}
	for range 3 {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("tasks did not start")
		}
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	time.AfterFunc(100*time.Millisecond, func() { close(gate) })
	if err := <-stopped; err != nil {
		t.Fatalf("Run after drain = %v; want nil", err)
	}
	for i := range 3 {
		if r := next(t, results); !r.Result.Success {
			t.Fatalf("in-flight task %d: %+v", i, r.Result)
		}
	}
	msg, err := departures.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no departure: %v", err)
	}
	dev, _ := bus.Decode(msg)
	if dev.Type != bus.TypeAgentDeparted || !strings.Contains(string(dev.Data), rt.InstanceID()) {
		t.Errorf("departure = %s %s", dev.Type, dev.Data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := m.res.Agents.Get(ctx, "Drainer.d1"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("registry key after drain: %v; want deleted", err)
	}
}

func TestNewRuntimeRejectsBadContracts(t *testing.T) {
	m := newMesh(t)
	noop := func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
		return schemas.AgentResult{}, nil
	}
	for _, c := range []schemas.AgentContract{
		{Name: "bad.name", Capability: "X", Description: "d"},
		{Name: "NoCap", Description: "d"},
		{Name: "BadType", Capability: "X", Description: "d", Inputs: []schemas.TypedInput{{Name: "x", DataType: "NOPE"}}},
	} {
		if _, err := agents.NewRuntime(m.nc, agents.Func(c, noop)); !errors.Is(err, agents.ErrInvalidAgent) {
			t.Errorf("NewRuntime(%+v) = %v; want ErrInvalidAgent", c, err)
		}
	}
	if _, err := agents.NewRuntime(m.nc, echo("E"), agents.WithConcurrency(0)); !errors.Is(err, agents.ErrInvalidOption) {
		t.Errorf("concurrency 0: %v", err)
	}
	if _, err := agents.NewRuntime(m.nc, echo("E"), agents.WithInstanceID("a.b")); err == nil {
		t.Error("instance id with a dot accepted")
	}
}

func TestRetryable(t *testing.T) {
	base := errors.New("x")
	err := fmt.Errorf("wrapped: %w", agents.Retryable(base))
	if !agents.IsRetryable(err) || !errors.Is(err, base) {
		t.Fatal("Retryable lost through wrapping")
	}
	if agents.IsRetryable(base) || agents.Retryable(nil) != nil {
		t.Fatal("plain error retryable, or Retryable(nil) not nil")
	}
}

// A task whose replyto is not one of the agent's result subjects (a KV key
// of a conversation, another agent's results) is refused: the agent answers
// malformed_event on its own result subject and writes nothing there.
func TestRuntimeRefusesForeignReplyTo(t *testing.T) {
	m := newMesh(t)
	m.serve(t, echo("Echo"))
	for _, to := range []string{"$KV.mesh_conversations.victim", "mesh.result.Other.t1", "mesh.result.Echo", "mesh.events.victim.chat"} {
		ev := task(t, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("x", "t")}})
		ev.SetExt(bus.ExtReplyTo, to)
		wantFailure(t, m.call(t, "Echo", ev), schemas.CodeMalformedEvent, "replyto", to, "mesh.result.Echo.")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, subj := range []string{"mesh.result.Other.t1", "mesh.events.victim.chat"} {
		s := m.res.Results
		if subj == "mesh.events.victim.chat" {
			s = m.res.Events
		}
		if msg, err := s.GetLastMsgForSubject(ctx, subj); err == nil {
			t.Errorf("the agent published on %s: %s", subj, msg.Data)
		}
	}
}

// A cancel request that comes before its task starts here (the task is
// prefetched, or not yet delivered) is kept, and the task is cancelled as
// it starts: Execute never runs it to the end.
func TestRuntimeCancelBeforeStart(t *testing.T) {
	m := newMesh(t)
	started := make(chan string, 1)
	m.serve(t, blocker("Slow", started))
	ev := task(t, schemas.TaskRequest{Instruction: "wait"})
	sub, err := m.nc.SubscribeSync(m.n.Result("Slow", ev.ID))
	if err != nil {
		t.Fatal(err)
	}
	control, _ := m.n.Control("Slow")
	if err := m.nc.Publish(control, []byte(fmt.Sprintf(`{"taskid":%q}`, ev.ID))); err != nil {
		t.Fatal(err)
	}
	if err := m.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	m.publish(t, "Slow", ev)
	wantFailure(t, next(t, sub), schemas.CodeCancelled, ev.ID)
}

// A task's owner extension puts its progress on the owner's subject,
// mesh.events.<conversation>.task.<owner>; an owner that is no id is a
// malformed task, refused before it runs.
func TestRuntimeProgressOfOwnedTask(t *testing.T) {
	m := newMesh(t)
	m.serve(t, echo("Echo"))
	progress, err := m.nc.SubscribeSync(m.n.EventsOf("conv-owned"))
	if err != nil {
		t.Fatal(err)
	}
	ev := task(t, schemas.TaskRequest{Inputs: textIn("hello")}, bus.ExtConversationID, "conv-owned", bus.ExtOwner, "alice")
	if r := m.call(t, "Echo", ev); !r.Result.Success {
		t.Fatalf("owned task: %+v", r.Result)
	}
	pm, err := progress.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal("no progress of the owned task")
	}
	if want := m.n.ForClient("alice").Events("conv-owned", "task"); pm.Subject != want {
		t.Errorf("progress on %s, want %s", pm.Subject, want)
	}
	bad := task(t, schemas.TaskRequest{Inputs: textIn("hello")}, bus.ExtOwner, "al.ice")
	r := m.call(t, "Echo", bad)
	if e := r.Result.Error; r.Result.Success || e == nil || e.Code != schemas.CodeMalformedEvent || !strings.Contains(e.Message, `owner extension (a client name) "al.ice"`) {
		t.Fatalf("task with owner al.ice: %+v %+v; want malformed_event naming the owner", r.Result, e)
	}
}
