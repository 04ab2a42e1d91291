package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// chat, watch (a conversation's turns) and state show (a run) print the
// budget as spent / limit, and what a budget or a policy refused on lines
// of their own, apart from other failures.
func TestBudgetsAndRefusalsArePrinted(t *testing.T) {
	refusal := "budget_exceeded: the budget of turn 2 of conversation c1 is 5000 tokens; it has spent 4200 tokens and the next model call asks about 1731 tokens, so the call was not made"
	turn := schemas.ChatResponse{ConversationID: "c1", Output: "The turn stopped: " + refusal, State: schemas.ChatFailed, Code: schemas.CodeBudgetExceeded, Error: refusal,
		Budget: &schemas.Budget{Tokens: 5000}, Usage: schemas.Usage{Tokens: schemas.Tokens{Prompt: 4000, Completion: 200}},
		ToolCalls: []schemas.ToolCallRecord{
			{Agent: "FolderAgent", Code: schemas.CodeRefused, Error: "FolderAgent refused by policy refuse-tools: FolderAgent may not be called here"},
			{Agent: "TextAgent", Success: true},
		}}
	var chat bytes.Buffer
	printChatResponse(&chat, turn, nil)
	for _, want := range []string{
		"budget: spent 4200 tokens and $0.0000 of the turn's 5000 tokens",
		"refused: the call of FolderAgent (policy_refused, a policy refused it): FolderAgent refused by policy refuse-tools",
		"refused: the turn (budget_exceeded, a budget stopped it): the budget of turn 2 of conversation c1 is 5000 tokens; it has spent 4200 tokens",
	} {
		if !strings.Contains(chat.String(), want) {
			t.Errorf("chat output lacks %q:\n%s", want, &chat)
		}
	}

	ev, err := bus.NewEvent(bus.TypeChatResponded, "/test", turn)
	if err != nil {
		t.Fatal(err)
	}
	var watch bytes.Buffer
	p := &eventPrinter{a: &app{out: &watch}}
	p.print(context.Background(), ev)
	for _, want := range []string{
		"chat.responded failed (budget_exceeded): The turn stopped",
		"  budget: spent 4200 tokens and $0.0000 of 5000 tokens",
		"  refused: the call of FolderAgent (policy_refused",
		"  refused: the turn (budget_exceeded",
	} {
		if !strings.Contains(watch.String(), want) {
			t.Errorf("watch output lacks %q:\n%s", want, &watch)
		}
	}

	run := &state.RunState{ID: "r1", Name: "spend", Status: schemas.RunFailed, Code: schemas.CodeBudgetExceeded,
		Error: "budget_exceeded: the run's budget of 3000 tokens is spent", Spec: pipelinespec.PipelineSpec{Budget: &schemas.Budget{Tokens: 3000}},
		Waves: [][]string{{"one"}, {"two"}}, State: &schemas.ConversationState{}, CreatedAt: time.Now(),
		Steps: map[string]*state.StepState{
			"one": {ID: "one", Agent: "Spender", Status: schemas.StepCompleted, Metrics: schemas.Metrics{Tokens: schemas.Tokens{Prompt: 4000, Completion: 1000}}},
			"two": {ID: "two", Agent: "Spender", Status: schemas.StepPending},
		}}
	var show bytes.Buffer
	printRun(&show, &viewer{}, run)
	for _, want := range []string{
		"  budget: spent 5000 tokens and $0.0000 of 3000 tokens (spent)",
		"  refused: the run (budget_exceeded, a budget stopped it): the run's budget of 3000 tokens is spent",
	} {
		if !strings.Contains(show.String(), want) {
			t.Errorf("state show lacks %q:\n%s", want, &show)
		}
	}
	run.Code, run.Error = schemas.CodeStepFailed, "step two failed"
	run.Steps["two"] = &state.StepState{ID: "two", Agent: "Writer", Status: schemas.StepFailed, Code: schemas.CodeRefused, Error: "policy_refused: the prompt names a secret"}
	show.Reset()
	printRun(&show, &viewer{}, run)
	if want := "  refused: step two (policy_refused, a policy refused it): the prompt names a secret"; !strings.Contains(show.String(), want) {
		t.Errorf("state show lacks %q:\n%s", want, &show)
	}
}
