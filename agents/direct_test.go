package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// callDirect sends ev to mesh.call.<agent> with core request-reply, in
// binary mode, and returns the reply.
func (m *mesh) callDirect(t testing.TB, agent string, ev bus.Event) *nats.Msg {
	t.Helper()
	subj, err := m.n.Call(agent)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := bus.Encode(subj, ev)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := m.nc.RequestMsg(msg, 10*time.Second)
	if err != nil {
		t.Fatalf("direct call to %s: %v", subj, err)
	}
	return reply
}

// endpointStats asks every instance of service for its stats with the
// micro protocol's own subject and types, and returns the call endpoint's
// stats of each.
func endpointStats(t testing.TB, nc *nats.Conn, service string) []micro.EndpointStats {
	t.Helper()
	subj, err := micro.ControlSubject(micro.StatsVerb, service, "")
	if err != nil {
		t.Fatal(err)
	}
	reply, err := nc.Request(subj, nil, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", subj, err)
	}
	var st micro.Stats
	if err := json.Unmarshal(reply.Data, &st); err != nil {
		t.Fatalf("stats of %s: %v: %s", service, err, reply.Data)
	}
	if st.Type != micro.StatsResponseType || st.Name != service {
		t.Fatalf("stats response type %q name %q", st.Type, st.Name)
	}
	var out []micro.EndpointStats
	for _, e := range st.Endpoints {
		if e != nil && e.Name == agents.EndpointCall {
			out = append(out, *e)
		}
	}
	if len(out) != 1 {
		t.Fatalf("stats of %s: %d %q endpoints; want 1: %s", service, len(out), agents.EndpointCall, reply.Data)
	}
	return out
}

// N direct calls show as N requests in the micro stats, the failed ones as
// errors, with the time spent in them; each reply is the result event.
func TestDirectCallStats(t *testing.T) {
	m := newMesh(t)
	m.serve(t, echo("Echo"))
	const n = 5
	for i := range n {
		reply := m.callDirect(t, "Echo", task(t, schemas.TaskRequest{Inputs: textIn("hello")}, bus.ExtConversationID, "c1"))
		r := decodeResult(t, reply)
		if !r.Result.Success || r.Event.Type != bus.TypeTaskCompleted {
			t.Fatalf("call %d: %+v", i, r.Result)
		}
		if s, _ := r.Result.Outputs["text"].Text(); s != "HELLO" {
			t.Fatalf("call %d: output %q", i, s)
		}
		if r.Event.Ext(bus.ExtConversationID) != "c1" || r.Result.Metrics.Attempt != 1 {
			t.Fatalf("call %d: result lost its correlation or attempt: %+v %+v", i, r.Event.Extensions, r.Result.Metrics)
		}
		if h := reply.Header.Get(micro.ErrorCodeHeader); h != "" {
			t.Fatalf("call %d: a success with error header %q", i, h)
		}
	}
	// Two failures: an input the contract does not take, and a body that
	// is not a CloudEvent at all.
	bad := m.callDirect(t, "Echo", task(t, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{}}))
	wantFailure(t, decodeResult(t, bad), schemas.CodeInvalidInput, `input "text" (TEXT) is required but missing`)
	if bad.Header.Get(micro.ErrorCodeHeader) != "400" || !strings.HasPrefix(bad.Header.Get(micro.ErrorHeader), "invalid_input: ") {
		t.Fatalf("micro error headers %q %q; want 400 and invalid_input: ...", bad.Header.Get(micro.ErrorCodeHeader), bad.Header.Get(micro.ErrorHeader))
	}
	subj, _ := m.n.Call("Echo")
	junk, err := m.nc.Request(subj, []byte("not an event"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	wantFailure(t, decodeResult(t, junk), schemas.CodeMalformedEvent)

	st := endpointStats(t, m.nc, "Echo")[0]
	if st.NumRequests != n+2 || st.NumErrors != 2 {
		t.Fatalf("stats: %d requests, %d errors; want %d and 2", st.NumRequests, st.NumErrors, n+2)
	}
	if st.ProcessingTime <= 0 || st.AverageProcessingTime <= 0 || !strings.Contains(st.LastError, "malformed_event") {
		t.Fatalf("stats: processing %s, average %s, last error %q", st.ProcessingTime, st.AverageProcessingTime, st.LastError)
	}
	if st.Subject != "mesh.call.Echo" || st.QueueGroup != micro.DefaultQueueGroup {
		t.Fatalf("endpoint subject %q queue group %q", st.Subject, st.QueueGroup)
	}
}

// What `nats req mesh.call.Echo '<event JSON>'` does: a plain core request
// whose body is a structured CloudEvent, no headers.
func TestDirectCallPlainRequest(t *testing.T) {
	m := newMesh(t)
	m.serve(t, echo("Echo"))
	body := `{"specversion":"1.0","type":"io.agentmesh.task.requested","source":"/cli","id":"t-plain",` +
		`"datacontenttype":"application/json","data":{"inputs":{"text":{"data_type":"TEXT","value":"plain"}}}}`
	reply, err := m.nc.Request("mesh.call.Echo", []byte(body), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := decodeResult(t, reply)
	if !r.Result.Success || r.Event.Ext(bus.ExtTaskID) != "t-plain" {
		t.Fatalf("result %+v, taskid %q", r.Result, r.Event.Ext(bus.ExtTaskID))
	}
	if s, _ := r.Result.Outputs["text"].Text(); s != "PLAIN" {
		t.Fatalf("output %q", s)
	}
}

// A direct call is validated by the same code as a durable task: the same
// bad task fails with the same code and message on both paths.
func TestDirectCallValidatedLikeDurable(t *testing.T) {
	m := newMesh(t)
	m.serve(t, echo("Echo"))
	for _, req := range []schemas.TaskRequest{
		{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("x", "t"), "extra": schemas.TextValue("y", "t")}},
		{Inputs: map[string]schemas.TypedValue{"text": {DataType: schemas.TypeFileIDs, Value: json.RawMessage(`{}`)}}},
	} {
		ev := task(t, req) // one event, so the messages name the same task
		durable := m.call(t, "Echo", ev)
		direct := decodeResult(t, m.callDirect(t, "Echo", ev))
		if durable.Result.Error == nil || direct.Result.Error == nil || *durable.Result.Error != *direct.Result.Error {
			t.Fatalf("durable %+v\ndirect  %+v", durable.Result.Error, direct.Result.Error)
		}
	}
}

// The direct path does not retry: what the durable path would redeliver
// is answered at once with a retryable failure, and a deadline that
// passes is a timeout.
func TestDirectCallNoRetryAndDeadline(t *testing.T) {
	m := newMesh(t)
	var calls atomic.Int32
	rec := &recorder{}
	a := agents.Func(schemas.AgentContract{Name: "Flaky", Capability: schemas.CapAnalysis, Description: "upstream down, or slow"},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			calls.Add(1)
			if ec.Instruction() == "slow" {
				<-ctx.Done()
				return schemas.AgentResult{}, ctx.Err()
			}
			return schemas.AgentResult{}, agents.Retryable(errors.New("upstream down"))
		})
	m.serve(t, a, agents.WithBackoff(10*time.Millisecond), agents.WithObserver(rec))

	ev := task(t, schemas.TaskRequest{})
	reply := m.callDirect(t, "Flaky", ev)
	r := decodeResult(t, reply)
	wantFailure(t, r, schemas.CodeUnavailable, "upstream down", "not retried", "mesh.task.Flaky")
	if !r.Result.Error.Retryable || reply.Header.Get(micro.ErrorCodeHeader) != "503" {
		t.Fatalf("retryable %v, code header %q", r.Result.Error.Retryable, reply.Header.Get(micro.ErrorCodeHeader))
	}
	if got := rec.of(ev.ID); strings.Join(got, "|") != "received 1|started 1|finished failed unavailable" {
		t.Fatalf("observed %q", got)
	}

	slow := task(t, schemas.TaskRequest{Instruction: "slow", TimeoutMS: 100})
	reply = m.callDirect(t, "Flaky", slow)
	wantFailure(t, decodeResult(t, reply), schemas.CodeTimeout, "did not finish within")
	if reply.Header.Get(micro.ErrorCodeHeader) != "504" {
		t.Fatalf("code header %q", reply.Header.Get(micro.ErrorCodeHeader))
	}
	if calls.Load() != 2 {
		t.Fatalf("the agent ran %d times; want 2 (no retry)", calls.Load())
	}
}

// A direct call in flight when the instance stops is answered before Run
// returns.
func TestDirectCallDrain(t *testing.T) {
	m := newMesh(t)
	started, gate := make(chan struct{}), make(chan struct{})
	a := agents.Func(schemas.AgentContract{Name: "Gated", Capability: schemas.CapAnalysis, Description: "waits for a gate"},
		func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
			close(started)
			<-gate
			return schemas.AgentResult{Success: true, Summary: "through"}, nil
		})
	_, stop := m.start(t, a)
	msg, err := bus.Encode("mesh.call.Gated", task(t, schemas.TaskRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	replies := make(chan *nats.Msg, 1)
	go func() {
		reply, _ := m.nc.RequestMsg(msg, 10*time.Second)
		replies <- reply
	}()
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		t.Fatalf("Run returned (%v) while a direct call was in flight", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(gate)
	reply := <-replies
	if reply == nil {
		t.Fatal("no answer to the call in flight")
	}
	if r := decodeResult(t, reply); !r.Result.Success || r.Result.Summary != "through" {
		t.Fatalf("the call in flight got %+v", r.Result)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
