package agents_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// writer reports its text input in two pieces.
func writer() agents.Agent {
	return agents.Func(schemas.AgentContract{
		Name: "Writer", Capability: schemas.CapGeneration, Description: "writes its text in pieces",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		s, err := ec.Text("text")
		if err != nil {
			return schemas.AgentResult{}, err
		}
		agents.ReportText(ctx, s[:2])
		agents.ReportText(ctx, "")
		agents.ReportText(ctx, s[2:])
		return schemas.AgentResult{Success: true, Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue(s, "Writer")}}, nil
	})
}

// ReportText sends a task's text on mesh.delta of its run (else its
// conversation, else the task), numbered, naming the task and the agent;
// an empty piece is not sent. Outside a task it does nothing.
func TestReportTextGoesToTheTasksRun(t *testing.T) {
	m := newMesh(t)
	m.serve(t, writer())
	sub, err := m.nc.SubscribeSync(m.n.Deltas("run-7"))
	if err != nil {
		t.Fatal(err)
	}
	ev := task(t, schemas.TaskRequest{Inputs: textIn("dusk")}, bus.ExtRunID, "run-7", bus.ExtStepID, "s1")
	if r := m.call(t, "Writer", ev); !r.Result.Success {
		t.Fatalf("result %+v", r.Result)
	}
	for i, want := range []string{"du", "sk"} {
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("piece %d: %v", i, err)
		}
		var d schemas.ChatDelta
		if err := json.Unmarshal(msg.Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.Text != want || d.Seq != i+1 || d.TaskID != ev.ID || d.Agent != "Writer" || d.RunID != "run-7" || d.ConversationID != "" {
			t.Errorf("piece %d = %+v", i, d)
		}
	}
	agents.ReportText(context.Background(), "nowhere") // outside Execute: nothing, no panic
}
