package pipeline

import (
	"fmt"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// overBudget ends a run whose budget (its spec's) the steps of the waves
// before h.Wave have used up, before that wave starts: failed, with code
// budget_exceeded naming the limit and the spend. It reports whether it
// did.
func overBudget(h *state.RunHeader, sd *state.RunSpec, now time.Time, ch *runChanges) bool {
	b := sd.Spec.Budget
	if b == nil || !b.Reached(h.Usage) {
		return false
	}
	h.Status, h.Code = schemas.RunFailed, schemas.CodeBudgetExceeded
	h.Error = fmt.Sprintf("%s: the run's budget of %s is spent: its steps used %d tokens and $%.6f, so the %d steps of wave %d and those after it were not started (raise the spec's budget, or submit with a larger one)",
		schemas.CodeBudgetExceeded, b, h.Usage.Tokens.Prompt+h.Usage.Tokens.Completion, h.Usage.Cost, len(sd.Waves[h.Wave]), h.Wave+1)
	h.FinishedAt = now
	ch.finished = true
	return true
}

// budgetLeft is what a task of the wave in progress may spend: the run's
// budget less what the waves before used (nil without a budget). Steps of
// one wave each get the whole remainder.
func budgetLeft(sd *state.RunSpec, h *state.RunHeader) *schemas.Budget {
	b := sd.Spec.Budget
	if b == nil {
		return nil
	}
	left, ok := b.Left(h.Usage)
	if !ok {
		return nil // overBudget stops the run before such a wave starts
	}
	return &left
}
