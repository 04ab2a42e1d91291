package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/schemas"
)

// refusals are the codes of what a budget or a policy refused, as chat,
// watch and state show print them: apart from other failures.
var refusals = map[string]string{
	schemas.CodeBudgetExceeded: "a budget stopped it",
	schemas.CodeRefused:        "a policy refused it",
}

// spentLine is "spent 5100 tokens and $0.0120 of 3000 tokens".
func spentLine(u schemas.Usage, b schemas.Budget) string {
	line := fmt.Sprintf("spent %d tokens and $%.4f of %s", u.Tokens.Prompt+u.Tokens.Completion, u.Cost, b)
	if b.Reached(u) {
		line += " (spent)"
	}
	return line
}

// printRefusal prints one refusal: "refused: WHAT (CODE, a budget stopped
// it): MESSAGE".
func printRefusal(w io.Writer, indent, what, code, message string) {
	fmt.Fprintf(w, "%srefused: %s (%s, %s): %s\n", indent, what, code, refusals[code], strings.TrimPrefix(message, code+": "))
}

// printTurnRefusals prints the agent calls of a turn a policy or a budget
// refused, then the turn's own refusal.
func printTurnRefusals(w io.Writer, indent string, r schemas.ChatResponse) {
	for _, tc := range r.ToolCalls {
		if _, ok := refusals[tc.Code]; ok {
			printRefusal(w, indent, "the call of "+tc.Agent, tc.Code, tc.Error)
		}
	}
	if _, ok := refusals[r.Code]; ok {
		printRefusal(w, indent, "the turn", r.Code, r.Error)
	}
}

// printTurn is how watch shows a chat turn's answer: its state, totals,
// budget and refusals.
func printTurn(w io.Writer, at string, r schemas.ChatResponse) {
	state := r.State
	if r.Code != "" {
		state += " (" + r.Code + ")"
	}
	fmt.Fprintf(w, "%s chat.responded %s: %s\n", at, state, schemas.Clip(strings.Join(strings.Fields(r.Output), " "), 200))
	fmt.Fprintf(w, "  totals: %s\n", usageLine(r.Usage))
	if r.Budget != nil {
		fmt.Fprintf(w, "  budget: %s\n", spentLine(r.Usage, *r.Budget))
	}
	printTurnRefusals(w, "  ", r)
}

// printRunBudget prints a run's budget against what its steps used, and
// the steps (or the run) a budget or a policy refused.
func printRunBudget(w io.Writer, r *stateview.RunState) {
	var used schemas.Usage
	for _, st := range r.Steps {
		used = used.Add(st.Metrics.Usage())
	}
	if b := r.Spec.Budget; b != nil {
		fmt.Fprintf(w, "  budget: %s\n", spentLine(used, *b))
	}
	stepRefused := false
	for _, wave := range r.Waves {
		for _, id := range wave {
			if st := r.Steps[id]; st != nil {
				if _, ok := refusals[st.Code]; ok {
					printRefusal(w, "  ", "step "+id, st.Code, st.Error)
					stepRefused = true
				}
			}
		}
	}
	if _, ok := refusals[r.Code]; ok && !stepRefused {
		printRefusal(w, "  ", "the run", r.Code, r.Error)
	}
}
