package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// chat and run print the totals they are given: tokens, cost, model time
// and the agents' time.
func TestChatAndRunPrintTotals(t *testing.T) {
	u := schemas.Usage{Tokens: schemas.Tokens{Prompt: 1250, Completion: 550}, Cost: 0.0504, ModelMS: 1340, ToolMS: 2500}
	want := "1250 prompt + 550 completion tokens · $0.0504 · model 1.34s · agents 2.5s"

	var chat bytes.Buffer
	printChatResponse(&chat, schemas.ChatResponse{ConversationID: "c1", Output: "done", State: schemas.ChatCompleted, Steps: 2,
		ToolCalls: []schemas.ToolCallRecord{{Agent: "Writer", Success: true, DurationMS: 2600, Usage: u}}, Usage: u}, nil)
	if !strings.Contains(chat.String(), want) {
		t.Errorf("chat output lacks %q:\n%s", want, &chat)
	}

	ev, err := bus.NewEvent(bus.TypePipelineCompleted, "/test", schemas.RunEvent{RunID: "r1", Status: schemas.RunCompleted, Completed: 2, Steps: 2, Usage: u})
	if err != nil {
		t.Fatal(err)
	}
	var run bytes.Buffer
	printPipelineEvent(&run, ev)
	if !strings.Contains(run.String(), "  totals: "+want) {
		t.Errorf("run output lacks the totals %q:\n%s", want, &run)
	}
	ev, _ = bus.NewEvent(bus.TypeStepCompleted, "/test", schemas.StepEvent{RunID: "r1", Step: "write", Agent: "Writer", Status: schemas.StepCompleted, Usage: u})
	run.Reset()
	printPipelineEvent(&run, ev)
	if !strings.Contains(run.String(), "(1250+550 tokens, $0.0504)") {
		t.Errorf("step line lacks its usage:\n%s", &run)
	}
}
