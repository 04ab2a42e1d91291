package pipeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents/builtin/prompt"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// sendTool counts its calls.
type sendTool struct{ calls atomic.Int32 }

func (s *sendTool) Name() string                 { return "send_mail" }
func (s *sendTool) Description() string          { return "sends a mail" }
func (s *sendTool) InputSchema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (s *sendTool) Call(context.Context, json.RawMessage) (string, error) {
	s.calls.Add(1)
	return "sent", nil
}

// A PromptAgent whose policy holds a tool for approval makes its pipeline
// step wait, as any agent asking for approval does; approved, the task goes
// out again with approved: true and the tool runs.
func TestPromptAgentPolicyApprovalWaitsInAPipeline(t *testing.T) {
	m := meshtest.New(t)
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call("send_mail", map[string]any{"to": "team"})),
		llmtest.Calls(llmtest.Call("send_mail", map[string]any{"to": "team"})),
		llmtest.Answer("Mail sent."),
	)
	c, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := prompt.Parse([]byte(`
name: Mailer
description: Mails the team.
capability: GENERATION
system_prompt: Mail the team.
outputs: [{name: answer, data_type: TEXT}]
policy: {approve_tools: [send_mail]}
`))
	if err != nil {
		t.Fatal(err)
	}
	mail := &sendTool{}
	a, err := prompt.New(cfg, nil, prompt.WithTools(c, mail))
	if err != nil {
		t.Fatal(err)
	}
	m.Run(t, a)
	o := m.Orchestrator(t, []string{"Mailer"}, orchestrator.WithSweepInterval(100*time.Millisecond))
	spec := client.NewPipeline("mail-with-approval").Step("mail", "Mailer").MustBuild()
	events := m.Events(t, "mail-1")
	m.Submit(t, spec, "mail-1")
	ev := waitFor(t, events, "mail", bus.TypeStepWaiting)
	var se schemas.StepEvent
	if err := ev.DataAs(&se); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(se.Reason, `send_mail`) || !strings.Contains(se.Reason, `{"to":"team"}`) || mail.calls.Load() != 0 {
		t.Fatalf("waiting reason %q, %d calls", se.Reason, mail.calls.Load())
	}
	resolve(t, m, pipelinespec.Resolution{RunID: "mail-1", Step: "mail", Decision: pipelinespec.DecisionApprove, By: "ann"})
	done := meshtest.WaitRun(t, o.Store(), "mail-1", 10*time.Second)
	if done.Status != schemas.RunCompleted || mail.calls.Load() != 1 || done.Steps["mail"].Attempt != 2 {
		t.Fatalf("run %s (%s), %d calls, step %+v", done.Status, done.Error, mail.calls.Load(), done.Steps["mail"])
	}
}
