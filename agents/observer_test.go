package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/schemas"
)

// recorder keeps what the runtime observed, one line per observation.
type recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *recorder) Observe(_ context.Context, o schemas.Observation) {
	var line string
	switch o := o.(type) {
	case schemas.TaskReceived:
		line = fmt.Sprintf("received %s %d", o.TaskID, o.Delivery)
	case schemas.TaskStarted:
		line = fmt.Sprintf("started %s %d", o.TaskID, o.Delivery)
	case schemas.TaskFinished:
		line = fmt.Sprintf("finished %s %s %s", o.TaskID, o.Outcome, o.Code)
		if o.Agent != "Flaky" || o.Duration <= 0 {
			line += " (bad agent or duration)"
		}
	default:
		line = fmt.Sprintf("unexpected %T", o)
	}
	r.mu.Lock()
	r.lines = append(r.lines, strings.TrimSpace(line))
	r.mu.Unlock()
}

func (r *recorder) of(taskID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, l := range r.lines {
		if strings.Contains(l, " "+taskID) {
			out = append(out, strings.Replace(l, " "+taskID, "", 1))
		}
	}
	return out
}

// Every task an instance takes is observed as received, started and
// finished with its outcome, from one place each; a retry is a finish
// with outcome retry, followed by the redelivery's own three.
func TestRuntimeObserver(t *testing.T) {
	m := newMesh(t)
	rec := &recorder{}
	var recovering sync.Once
	a := agents.Func(schemas.AgentContract{Name: "Flaky", Capability: schemas.CapAnalysis, Description: "fails once, or always"},
		func(_ context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			if ec.Instruction() == "fail" {
				return schemas.Failure("Flaky", schemas.CodeNotFound, "nothing there", false), nil
			}
			if ec.Instruction() == "recover" {
				failedOnce := false
				recovering.Do(func() { failedOnce = true })
				if !failedOnce {
					return schemas.AgentResult{Success: true}, nil
				}
			}
			return schemas.AgentResult{}, agents.Retryable(errors.New("upstream down"))
		})
	m.serve(t, a, agents.WithMaxDeliver(2), agents.WithBackoff(10*time.Millisecond), agents.WithObserver(rec))

	ok := task(t, schemas.TaskRequest{Instruction: "recover"})
	m.call(t, "Flaky", ok)
	failed := task(t, schemas.TaskRequest{Instruction: "fail"})
	m.call(t, "Flaky", failed)
	dead := task(t, schemas.TaskRequest{Instruction: "never"})
	m.call(t, "Flaky", dead)

	want := map[string][]string{
		ok.ID:     {"received 1", "started 1", "finished retry", "received 2", "started 2", "finished completed"},
		failed.ID: {"received 1", "started 1", "finished failed not_found"},
		dead.ID:   {"received 1", "started 1", "finished retry", "received 2", "started 2", "finished dead_letter " + schemas.CodeExhausted},
	}
	for id, w := range want {
		// The finish is observed after the result is published and acked.
		var got []string
		fixture.Within(fixture.WaitTimeout, func() bool { got = rec.of(id); return len(got) >= len(w) })
		if strings.Join(got, "; ") != strings.Join(w, "; ") {
			t.Errorf("task %s observed %q, want %q", id, got, w)
		}
	}
	if _, err := agents.NewRuntime(m.nc, a, agents.WithObserver(nil)); !errors.Is(err, agents.ErrInvalidOption) {
		t.Errorf("a nil observer: %v", err)
	}
}

// A Go agent that declares a data type of its own validates its outputs
// against the declared schema.
func TestRuntimeDeclaredDataType(t *testing.T) {
	m := newMesh(t)
	freq := schemas.DataTypeDefinition{Name: "WORD_FREQUENCIES", Description: "word counts", Merge: "sum",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":{"type":"integer","minimum":1}}`)}
	a := agents.Func(schemas.AgentContract{Name: "Counter", Capability: schemas.CapAnalysis, Description: "counts words",
		DataTypes: []schemas.DataTypeDefinition{freq},
		Outputs:   []schemas.TypedOutput{{Name: "freq", DataType: "WORD_FREQUENCIES", Mergeable: true}}},
		func(_ context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			counts := map[string]int{}
			for _, w := range strings.Fields(ec.Instruction()) {
				counts[w]++
			}
			if ec.Instruction() == "forge" {
				counts["forge"] = 0
			}
			v, err := schemas.NewValue("WORD_FREQUENCIES", counts, "Counter")
			return schemas.AgentResult{Success: true, Outputs: map[string]schemas.TypedValue{"freq": v}}, err
		})
	m.serve(t, a, agents.WithRegistry(schemas.NewRegistry()))

	r := m.call(t, "Counter", task(t, schemas.TaskRequest{Instruction: "sun sea sun"}))
	if !r.Result.Success || string(r.Result.Outputs["freq"].Value) != `{"sea":1,"sun":2}` {
		t.Fatalf("result = %+v", r.Result)
	}
	wantFailure(t, m.call(t, "Counter", task(t, schemas.TaskRequest{Instruction: "forge"})), schemas.CodeAgentError, "WORD_FREQUENCIES", "minimum")
}
