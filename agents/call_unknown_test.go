package agents_test

import (
	"errors"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// A call by name to an agent with no live instance fails after the call
// grace with unknown_agent, naming the agent and the live ones, instead of
// waiting out the caller's deadline; an agent that starts within the grace
// is called as usual.
func TestCallUnknownAgent(t *testing.T) {
	m := newMesh(t)
	m.serve(t, echo("Bystander"))
	m.serve(t, relay("Caller", "Nobody", nil), agents.WithCallGrace(300*time.Millisecond))
	start := time.Now()
	ev := task(t, schemas.TaskRequest{Inputs: textIn("x")}, bus.ExtDeadline, time.Now().Add(20*time.Second).UTC().Format(time.RFC3339Nano))
	r := m.call(t, "Caller", ev)
	wantFailure(t, r, schemas.CodeUnknownAgent, "Caller calling Nobody", `no live instance of agent "Nobody" within 300ms`,
		"live agents: Bystander, Caller")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the call failed %v after it was made; want after its 300ms grace, not at the 20s deadline", took)
	}

	// With no grace, the live keys alone decide.
	m.serve(t, relay("Hasty", "Nobody", nil), agents.WithCallGrace(0))
	wantFailure(t, m.call(t, "Hasty", task(t, schemas.TaskRequest{Inputs: textIn("x")})), schemas.CodeUnknownAgent,
		`no live instance of agent "Nobody" within 0s`)

	// The callee starts a second into the call's 5 s grace: the call
	// goes through.
	m.serve(t, relay("Patient", "Latecomer", nil), agents.WithCallGrace(5*time.Second))
	ev = task(t, schemas.TaskRequest{Inputs: textIn("late")}, bus.ExtDeadline, time.Now().Add(20*time.Second).UTC().Format(time.RFC3339Nano))
	sub, err := m.nc.SubscribeSync(m.n.Result("Patient", ev.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	m.publish(t, "Patient", ev)
	time.Sleep(time.Second)
	m.serve(t, echo("Latecomer"))
	r = next(t, sub)
	if !r.Result.Success {
		t.Fatalf("call to an agent starting within the grace: %+v", r.Result.Error)
	}
	if got, _ := r.Result.Outputs["text"].Text(); got != "LATE>PATIENT" {
		t.Errorf("text = %q; want LATE>PATIENT", got)
	}

	if _, err := agents.NewRuntime(m.nc, echo("Bad"), agents.WithCallGrace(-time.Second)); !errors.Is(err, agents.ErrInvalidOption) {
		t.Errorf("WithCallGrace(-1s): %v; want ErrInvalidOption", err)
	}
}
