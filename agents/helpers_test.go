package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/schemas"
)

// mesh is one test's embedded server, provisioned.
type mesh struct {
	srv *bustest.Server
	res *bus.Resources
	nc  *nats.Conn
	js  jetstream.JetStream
	n   bus.Names
}

func newMesh(t testing.TB) *mesh {
	t.Helper()
	srv := bustest.Start(t)
	res := srv.Provision(t)
	nc := srv.Conn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &mesh{srv: srv, res: res, nc: nc, js: js, n: srv.Names()}
}

// serve runs a runtime for a on its own connection until the test ends and
// checks that it drains cleanly.
func (m *mesh) serve(t testing.TB, a agents.Agent, opts ...agents.Option) *agents.Runtime {
	t.Helper()
	rt, stop := m.start(t, a, opts...)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run returned %v after its ctx ended; want nil", err)
		}
	})
	return rt
}

// start runs a runtime and returns a stop func that cancels it and returns
// Run's error.
func (m *mesh) start(t testing.TB, a agents.Agent, opts ...agents.Option) (*agents.Runtime, func() error) {
	t.Helper()
	rt, err := agents.NewRuntime(m.srv.Conn(t), a, append([]agents.Option{agents.WithHeartbeat(400 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- rt.Run(ctx) }()
	select {
	case <-rt.Ready():
	case err := <-errc:
		cancel()
		t.Fatalf("Run failed to start: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("runtime not ready after 10s")
	}
	var stopped bool
	var runErr error
	return rt, func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case runErr = <-errc:
			case <-time.After(15 * time.Second):
				runErr = errors.New("Run did not return within 15s of cancel")
			}
		}
		return runErr
	}
}

// task builds a task event for agent.
func task(t testing.TB, req schemas.TaskRequest, ext ...string) bus.Event {
	t.Helper()
	ev, err := bus.NewEvent(bus.TypeTaskRequested, "/test", req)
	if err != nil {
		t.Fatal(err)
	}
	ev.DataContentType = bus.ContentTypeJSON
	for i := 0; i+1 < len(ext); i += 2 {
		ev.SetExt(ext[i], ext[i+1])
	}
	return ev
}

// publish sends a task event to mesh.task.<agent> through JetStream.
func (m *mesh) publish(t testing.TB, agent string, ev bus.Event) {
	t.Helper()
	subj, err := m.n.Task(agent)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := bus.Encode(subj, ev)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := m.js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
}

// result is a decoded result event.
type result struct {
	Event  bus.Event
	Result schemas.AgentResult
}

// call subscribes to the result subject, publishes the task and waits for
// its result.
func (m *mesh) call(t testing.TB, agent string, ev bus.Event) result {
	t.Helper()
	sub, err := m.nc.SubscribeSync(m.n.Result(agent, ev.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	m.publish(t, agent, ev)
	return next(t, sub)
}

func next(t testing.TB, sub *nats.Subscription) result {
	t.Helper()
	msg, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no result on %s: %v", sub.Subject, err)
	}
	return decodeResult(t, msg)
}

func decodeResult(t testing.TB, msg *nats.Msg) result {
	t.Helper()
	ev, err := bus.Decode(msg)
	if err != nil {
		t.Fatalf("result on %s is not a CloudEvent: %v", msg.Subject, err)
	}
	var r schemas.AgentResult
	if err := json.Unmarshal(ev.Data, &r); err != nil {
		t.Fatalf("result data: %v", err)
	}
	return result{Event: ev, Result: r}
}

// wantFailure checks a failed result's code and that its message holds every fragment.
func wantFailure(t testing.TB, r result, code string, fragments ...string) {
	t.Helper()
	if r.Result.Success || r.Result.Error == nil {
		t.Fatalf("result = %+v; want a failure with code %s", r.Result, code)
	}
	if r.Event.Type != bus.TypeTaskFailed {
		t.Errorf("result event type = %s; want %s", r.Event.Type, bus.TypeTaskFailed)
	}
	if r.Result.Error.Code != code {
		t.Fatalf("error code = %s (%s); want %s", r.Result.Error.Code, r.Result.Error.Message, code)
	}
	for _, f := range fragments {
		if !contains(r.Result.Error.Message, f) {
			t.Errorf("error message %q does not mention %q", r.Result.Error.Message, f)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func textIn(s string) map[string]schemas.TypedValue {
	return map[string]schemas.TypedValue{"text": schemas.TextValue(s, "test")}
}
