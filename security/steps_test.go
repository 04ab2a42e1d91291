package security_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/schemas"
)

// On a secure mesh an agent records its steps and reads them back on a
// redelivery as its own identity: the first delivery records a step and
// asks for a retry; the second finds the step and does not run it.
func TestStepJournalSecure(t *testing.T) {
	m := startSecure(t)
	var runs, deliveries atomic.Int32
	m.serve(t, agents.Func(schemas.AgentContract{
		Name: "Journaler", Capability: schemas.CapTransformation, Description: "records a step, then asks for a retry once",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		v, err := schemas.Step(ctx, "work", func(context.Context, string) (string, error) {
			runs.Add(1)
			return "done once", nil
		})
		if err != nil {
			return schemas.AgentResult{}, err
		}
		if deliveries.Add(1) == 1 {
			return schemas.AgentResult{}, agents.Retryable(errors.New("once more"))
		}
		return schemas.AgentResult{Success: true, Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue(v, "Journaler")}}, nil
	}), agents.WithBackoff(10*time.Millisecond))
	a := m.connect(t, alice)
	res := directCall(t, m, a, alice, "Journaler", upper("go"))
	if !res.Result.Success || res.Result.Metrics.Attempt != 2 {
		t.Fatalf("result %+v %+v; want a success on the second delivery", res.Result, res.Result.Error)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the step ran %d times over two deliveries; want once", n)
	}
}
