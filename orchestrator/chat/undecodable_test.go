package chat_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestChatUndecodableResultFailsCallAtOnce: a result of a tool call that
// cannot be decoded (an overlong %C0%A0 in a header) ends the call at once
// with the decode error, which the model reads and the turn records,
// instead of the call waiting out its 20 s timeout; the message is kept on
// mesh.dead.<agent>.
func TestChatUndecodableResultFailsCallAtOnce(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	release := make(chan struct{})
	defer close(release)
	m.Agent(t, schemas.AgentContract{Name: "Mangled", Capability: schemas.CapEvaluation, Description: "Answers garbled.", TimeoutMS: 20000},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return schemas.AgentResult{}, ctx.Err()
		}, 1)
	names := m.Srv.Names()
	js := m.Srv.JetStream(t)
	// Answer the task in the agent's stead, with a header no receiver may accept.
	taskSubj, _ := names.Task("Mangled")
	sent := make(chan time.Time, 1)
	sub, err := m.NC.Subscribe(taskSubj, func(msg *nats.Msg) {
		task, err := bus.Decode(msg)
		if err != nil {
			t.Errorf("task: %v", err)
			return
		}
		ev, _ := bus.NewEvent(bus.TypeTaskCompleted, "test", fixture.OK("Mangled", "fine", nil))
		ev.SetExt(bus.ExtTaskID, task.ID)
		res, err := bus.Encode(task.Ext(bus.ExtReplyTo), ev)
		if err != nil {
			t.Error(err)
			return
		}
		res.Header.Set("ce-subject", "%C0%A0")
		sent <- time.Now()
		if _, err := js.PublishMsg(context.Background(), res); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	srv := llmtest.New(t, llmtest.Calls(llmtest.Call("Mangled", nil)), llmtest.Answer("It answered garbled."))
	chatReplica(t, m, nil, []string{"Mangled"}, chat.WithLLM(newLLM(t, srv)))

	_, resp, _ := ask(t, m, "", "ask Mangled")
	took := time.Since(<-sent)
	if resp.State != schemas.ChatCompleted || len(resp.ToolCalls) != 1 {
		t.Fatalf("response = %+v", resp)
	}
	if took > 10*time.Second {
		t.Errorf("the turn ended %v after the result; want the call to fail at once, not at its 20s timeout", took)
	}
	call := resp.ToolCalls[0]
	obs := toolMessages(srv.Requests()[1])
	for _, want := range []string{schemas.CodeMalformedResult, "%C0%A0", "mesh.dead.Mangled"} {
		if call.Success || !strings.Contains(call.Error, want) {
			t.Errorf("tool call %+v: want a failure mentioning %q", call, want)
		}
		if len(obs) != 1 || !strings.Contains(obs[0], want) {
			t.Errorf("the model read %q; want it to mention %q", obs, want)
		}
	}
	dead, err := m.Res.Dead.GetLastMsgForSubject(context.Background(), "mesh.dead.Mangled")
	if err != nil {
		t.Fatalf("no dead letter: %v", err)
	}
	if dead.Header.Get("ce-subject") != "%C0%A0" || !strings.Contains(dead.Header.Get(bus.HeaderDeadReason), "%C0%A0") {
		t.Errorf("dead letter headers %v", dead.Header)
	}
}
