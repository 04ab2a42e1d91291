package agents_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// publishOn sends a task event to subject through JetStream, with hdr.
func (m *mesh) publishOn(t testing.TB, subject string, ev bus.Event, hdr ...string) {
	t.Helper()
	msg, err := bus.Encode(subject, ev)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		msg.Header.Set(hdr[i], hdr[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := m.js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
}

// An instance served as version 2.0.0 takes the tasks pinned to it from
// mesh.task.Echo.v.2_0_0 (its own consumer) besides the agent's, and
// stamps its version on each result; an instance of 1.0.0 never takes
// them.
func TestRuntimeServesItsVersion(t *testing.T) {
	m := newMesh(t)
	m.serve(t, echo("Echo"), agents.WithAgentVersion("1.0.0"))
	m.serve(t, echo("Echo"), agents.WithAgentVersion("2.0.0"))
	pinned, err := m.n.TaskVersion("Echo", "2.0.0")
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		ev := task(t, schemas.TaskRequest{Inputs: textIn("hi")})
		sub, err := m.nc.SubscribeSync(m.n.Result("Echo", ev.ID))
		if err != nil {
			t.Fatal(err)
		}
		m.publishOn(t, pinned, ev)
		r := next(t, sub)
		_ = sub.Unsubscribe()
		if !r.Result.Success || r.Result.Version != "2.0.0" {
			t.Fatalf("pinned task answered %+v; want a success of version 2.0.0", r.Result)
		}
	}
	ctx := context.Background()
	cons, err := m.js.Consumer(ctx, m.n.TasksStream(), bus.VersionConsumer("Echo", "2_0_0"))
	if err != nil {
		t.Fatalf("no consumer of version 2.0.0: %v", err)
	}
	if f := cons.CachedInfo().Config.FilterSubject; f != pinned {
		t.Errorf("its filter is %q, want %q", f, pinned)
	}
	if _, err := agents.NewRuntime(m.nc, echo("Echo"), agents.WithAgentVersion("2.0_0")); err == nil {
		t.Error("WithAgentVersion(2.0_0) was accepted; want an error naming the version")
	}
}

// A shadow copy (bus.HeaderShadow) of a task is answered on
// mesh.result.<agent>.shadow.<taskid>, marked shadow, and never on its
// replyto, and reports no progress.
func TestRuntimeShadowCopyAnswersNoOne(t *testing.T) {
	m := newMesh(t)
	m.serve(t, echo("Echo"), agents.WithAgentVersion("2.0.0"))
	ev := task(t, schemas.TaskRequest{Inputs: textIn("hi")}, bus.ExtConversationID, "conv1", bus.ExtReplyTo, m.n.OrchestratorResult("Echo", "conv1"))
	caller, err := m.nc.SubscribeSync(m.n.AgentResults("Echo"))
	if err != nil {
		t.Fatal(err)
	}
	progress, err := m.nc.SubscribeSync("mesh.events.>")
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := m.n.TaskVersion("Echo", "2.0.0")
	m.publishOn(t, subj, ev, bus.HeaderShadow, "1", jetstream.MsgIDHeader, "shadow-"+ev.ID)
	msg, err := caller.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no result: %v", err)
	}
	if want := m.n.ShadowResult("Echo", ev.ID); msg.Subject != want {
		t.Fatalf("the shadow copy was answered on %s, want %s", msg.Subject, want)
	}
	rev, _ := bus.Decode(msg)
	var res schemas.AgentResult
	if err := rev.DataAs(&res); err != nil || !res.Success || !res.Shadow || res.Version != "2.0.0" || rev.Ext(bus.ExtConversationID) != "" {
		t.Errorf("shadow result %+v (conversation %q), %v; want a success marked shadow, of 2.0.0, in no conversation", res, rev.Ext(bus.ExtConversationID), err)
	}
	if m, err := caller.NextMsg(300 * time.Millisecond); err == nil {
		t.Errorf("a second result on %s", m.Subject)
	}
	if m, err := progress.NextMsg(100 * time.Millisecond); err == nil {
		t.Errorf("the shadow copy reported progress on %s", m.Subject)
	}
}

// An instance that serves a version pulls from two consumers under one
// concurrency limit: it runs as many of the agent's tasks at once as its
// concurrency allows (an idle pull holds no slot), never more, and tasks of
// both subjects share the slots.
func TestRuntimeVersionSharesConcurrency(t *testing.T) {
	m := newMesh(t)
	g := newGated()
	m.serve(t, g.agent("Bounded", "b1"), agents.WithConcurrency(3), agents.WithAgentVersion("2.0.0"))
	results, err := m.nc.SubscribeSync("mesh.result.>")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		m.publish(t, "Bounded", task(t, schemas.TaskRequest{Instruction: string(rune('a' + i))}))
	}
	g.waitStarted(t, 3) // all three slots, none held by the idle version pull
	pinned, _ := m.n.TaskVersion("Bounded", "2.0.0")
	for i := range 3 {
		m.publishOn(t, pinned, task(t, schemas.TaskRequest{Instruction: string(rune('x' + i))}))
	}
	close(g.release)
	g.waitStarted(t, 3)
	for i := range 6 {
		if r := next(t, results); !r.Result.Success {
			t.Fatalf("task %d: %+v", i, r.Result)
		}
	}
	if p := g.peak.Load(); p != 3 {
		t.Errorf("peak concurrency %d; want 3", p)
	}
}
