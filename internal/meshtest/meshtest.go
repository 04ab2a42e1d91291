// Package meshtest runs a provisioned embedded NATS server with agents and
// orchestrator replicas for the tests of any package of the module.
package meshtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// Mesh is a provisioned embedded server for one test.
type Mesh struct {
	Srv *bustest.Server
	NC  *nats.Conn
	Res *bus.Resources

	agents Agents // stopped together when the test ends
}

// New starts a provisioned embedded server for one test.
func New(t testing.TB) *Mesh {
	t.Helper()
	srv := bustest.Start(t)
	res := srv.Provision(t)
	return &Mesh{Srv: srv, NC: srv.Conn(t), Res: res}
}

// Agent runs a test agent on the runtime in-process until the test ends.
func (m *Mesh) Agent(t testing.TB, c schemas.AgentContract, fn func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error), concurrency int) {
	t.Helper()
	m.Run(t, agents.Func(c, fn), agents.WithConcurrency(concurrency))
}

// Run runs agent a (a built-in one, say) on the runtime in-process until
// stop is called or the test ends, with a one-second heartbeat and opts,
// and returns once it is ready.
func (m *Mesh) Run(t testing.TB, a agents.Agent, opts ...agents.Option) (stop func()) {
	t.Helper()
	return m.agents.Run(t, m.Srv.Conn(t), a, append([]agents.Option{agents.WithHeartbeat(time.Second)}, opts...)...)
}

// Orchestrator runs one replica until the test ends and waits until it
// sees the named agents live.
func (m *Mesh) Orchestrator(t testing.TB, wait []string, opts ...orchestrator.Option) *orchestrator.Orchestrator {
	t.Helper()
	o, err := orchestrator.New(m.Srv.Conn(t), opts...)
	if err != nil {
		t.Fatalf("orchestrator.New: %v", err)
	}
	RunOrchestrator(t, o)
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	for _, a := range wait {
		if err := o.Registry().Wait(wctx, a, 1); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// Submit submits spec as run runID (a new id when empty).
func (m *Mesh) Submit(t testing.TB, spec pipelinespec.PipelineSpec, runID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js := m.Srv.JetStream(t)
	id, err := client.SubmitPipeline(ctx, js, m.Srv.Names(), spec, runID, "test")
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return id
}

// WaitRun waits until the run ends, within the given time, and returns it;
// the test fails naming its steps' states when it does not end in time.
func WaitRun(t testing.TB, store *state.Store, id string, within time.Duration) *state.RunState {
	t.Helper()
	var last *state.RunState
	if fixture.Within(within, func() bool {
		r, err := store.Run(context.Background(), id)
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("run %s: %v", id, err)
		}
		last = r
		return err == nil && r.Done()
	}) {
		return last
	}
	if last != nil {
		for id, st := range last.Steps {
			t.Logf("step %s: %s %s", id, st.Status, st.Error)
		}
	}
	t.Fatalf("run %s did not end within %s", id, within)
	return nil
}

// Stuck runs agent name, whose tasks never end before the test does, and
// fills MESH_TASKS, limited to room tasks with the discard policy new,
// with tasks for it: the stream refuses the next task (an operator's
// MaxMsgs reached while an agent is behind). Its one input, "text", is
// TEXT and optional.
func (m *Mesh) Stuck(t testing.TB, name string, room int64) {
	t.Helper()
	release := make(chan struct{})
	m.Agent(t, schemas.AgentContract{Name: name, Capability: schemas.CapTransformation, Description: "never finishes in time",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText}},
		Outputs: []schemas.TypedOutput{{Name: "out", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return fixture.OK(name, "late", nil), nil
		}, 1)
	t.Cleanup(func() { close(release) }) // before the agent stops: it drains its tasks
	names := m.Srv.Names()
	m.Srv.LimitStream(t, names.TasksStream(), room)
	d := meshcore.NewDispatcher(m.Srv.JetStream(t), names, "test")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range room {
		task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("fill", "test")}}
		if _, err := d.Dispatch(ctx, name, task, meshcore.DispatchMeta{TaskID: fmt.Sprintf("%s-filler-%d", name, i)}); err != nil {
			t.Fatalf("meshtest: filling MESH_TASKS: %v", err)
		}
	}
}

// Events subscribes to the events of run runID (every type) until the test
// ends.
func (m *Mesh) Events(t testing.TB, runID string) <-chan bus.Event {
	t.Helper()
	ch := make(chan bus.Event, 4096)
	sub, err := m.NC.Subscribe(m.Srv.Names().EventsOf(runID), func(msg *nats.Msg) {
		if ev, err := bus.Decode(msg); err == nil {
			ch <- ev
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := m.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	return ch
}

// Nonce returns the nonce run's task ids are tagged with (only the
// orchestrator's store has it).
func Nonce(t testing.TB, o *orchestrator.Orchestrator, run string) string {
	t.Helper()
	sd, err := o.Store().Spec(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	if sd.Nonce == "" {
		t.Fatalf("run %s has no nonce", run)
	}
	return sd.Nonce
}

// TextOut is the TEXT output "text" of a completed step of r.
func TextOut(t testing.TB, r *state.RunState, step string) string {
	t.Helper()
	st := r.Steps[step]
	if st == nil || st.Status != schemas.StepCompleted {
		t.Fatalf("step %s is %+v, want completed", step, st)
	}
	var s string
	if err := json.Unmarshal(st.Outputs["text"].Value, &s); err != nil {
		t.Fatalf("step %s output: %v", step, err)
	}
	return s
}
