package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// A step's events are stored in the order they happened: started, then
// completed or failed, once each, even when the agent answers at once and
// the next wave's tasks go out ahead of the header write (the started event
// goes out before the task, so nothing the task leads to can overtake it).
// Runs also end with the documented codes.
func TestStepEventsAreStoredStartedFirst(t *testing.T) {
	m := meshtest.New(t)
	m.Agent(t, schemas.AgentContract{Name: "Quick", Capability: schemas.CapTransformation, Description: "answers at once",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return fixture.OK("Quick", "quick", map[string]schemas.TypedValue{"text": schemas.TextValue("x", "Quick")}), nil
		}, 16)
	m.Agent(t, schemas.AgentContract{Name: "Broken", Capability: schemas.CapTransformation, Description: "fails"},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.Failure("Broken", schemas.CodeInvalidParams, "no ink", false), nil
		}, 4)
	o := m.Orchestrator(t, []string{"Quick", "Broken"})

	b := client.NewPipeline("order").Step("s0", "Quick")
	for i := 1; i < 8; i++ {
		b = b.Then(fmt.Sprintf("s%d", i), "Quick")
	}
	chain := b.Step("p1", "Quick").After("s2").Step("p2", "Quick").After("s2").MustBuild()
	broken := client.NewPipeline("broken").Step("a", "Quick").Then("b", "Broken").MustBuild()

	seen := watchStarts(t, m)
	const runs = 12
	for i := range runs {
		spec, id := chain, fmt.Sprintf("order-%d", i)
		if i%4 == 3 {
			spec, id = broken, fmt.Sprintf("broken-%d", i)
		}
		m.Submit(t, spec, id)
	}
	for i := range runs {
		id, steps := fmt.Sprintf("order-%d", i), len(chain.Steps)
		if i%4 == 3 {
			id, steps = fmt.Sprintf("broken-%d", i), 2
		}
		r := meshtest.WaitRun(t, o.Store(), id, 30*time.Second)
		evs := storedEvents(t, m, id, steps*2+1)
		pos := map[string]int{}
		for n, ev := range evs {
			if ev.Type == bus.TypePipelineCompleted {
				var re schemas.RunEvent
				_ = ev.DataAs(&re)
				if i%4 == 3 && (re.Status != schemas.RunFailed || re.Code != schemas.CodeStepFailed) {
					t.Errorf("run %s ended %s with code %q, want failed, %q", id, re.Status, re.Code, schemas.CodeStepFailed)
				}
				continue
			}
			var se schemas.StepEvent
			if err := ev.DataAs(&se); err != nil {
				t.Fatal(err)
			}
			key := se.Step + "/" + se.Status
			if _, dup := pos[key]; dup {
				t.Errorf("run %s: step %s reported %s twice", id, se.Step, se.Status)
			}
			pos[key] = n
			if se.Status == schemas.StepFailed && se.Code != schemas.CodeInvalidParams {
				t.Errorf("run %s: step %s failed with code %q, want the agent's %q", id, se.Step, se.Code, schemas.CodeInvalidParams)
			}
		}
		for sid := range r.Steps {
			started, ok := pos[sid+"/"+schemas.StepRunning]
			end, ended := pos[sid+"/"+schemas.StepCompleted]
			if !ended {
				end, ended = pos[sid+"/"+schemas.StepFailed]
			}
			if !ok || !ended || started > end {
				t.Errorf("run %s: step %s stored started at %d (%v), ended at %d (%v)", id, sid, started, ok, end, ended)
			}
		}
	}
	checkStartsFirst(t, seen)
}

// watchStarts records, in the order one subscriber sees them, the tasks
// and step started events published: one publisher's messages reach a
// subscriber in the order they were published.
func watchStarts(t *testing.T, m *meshtest.Mesh) <-chan string {
	t.Helper()
	nc := m.Srv.Conn(t)
	seen := make(chan string, 4096)
	sub, err := nc.Subscribe(m.Srv.Names().Prefix()+".>", func(msg *nats.Msg) {
		ev, err := bus.Decode(msg)
		if err != nil {
			return
		}
		switch ev.Type {
		case bus.TypeTaskRequested:
			seen <- "task " + ev.ID
		case bus.TypeStepStarted:
			var se schemas.StepEvent
			if ev.DataAs(&se) == nil {
				seen <- "started " + se.TaskID
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return seen
}

// checkStartsFirst fails for a task seen before its step's started event.
func checkStartsFirst(t *testing.T, seen <-chan string) {
	t.Helper()
	announced := map[string]bool{}
	for len(seen) > 0 {
		s := <-seen
		kind, task, _ := strings.Cut(s, " ")
		if kind == "started" {
			announced[task] = true
		} else if !announced[task] {
			t.Errorf("task %s went out before its step's started event", task)
		}
	}
}

// storedEvents reads the first n events stored for run id, in stream order.
func storedEvents(t *testing.T, m *meshtest.Mesh, id string, n int) []bus.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := m.Srv.JetStream(t).OrderedConsumer(ctx, m.Srv.Names().EventsStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{m.Srv.Names().Events(id, "pipeline")}})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.FetchNoWait(n + 5)
	if err != nil {
		t.Fatal(err)
	}
	var out []bus.Event
	for msg := range batch.Messages() {
		ev, err := bus.DecodeJS(msg)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	if len(out) < n {
		t.Fatalf("run %s: %d events stored, want %d", id, len(out), n)
	}
	return out
}
