package pipeline

import (
	"context"
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

// budgetLeft is what the steps of the wave in progress may spend together:
// the run's budget less what the waves before used (nil without a
// budget). Their model calls reserve and settle it in one ledger of the
// mesh's LLM bucket, waveBudgetKey.
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

// waveBudgetKey is the ledger the model calls of the steps of the wave in
// progress share: an agent's (the task's budget_key) and a router's or
// evaluator's, counted across replicas and agent instances.
func waveBudgetKey(h *state.RunHeader) string { return schemas.RunBudgetKey(h.ID, h.Wave) }

// withWaveBudget holds the model calls made under ctx for step (a router's,
// an evaluator's) to what is left of the run's budget, in the wave's
// ledger: a call that would cross it is not made (llm.ErrBudgetExceeded,
// code budget_exceeded).
func withWaveBudget(ctx context.Context, sd *state.RunSpec, h *state.RunHeader, step string) context.Context {
	left := budgetLeft(sd, h)
	if left == nil {
		return ctx
	}
	return schemas.WithSharedTaskBudget(ctx, fmt.Sprintf("step %q of run %s", step, h.ID), waveBudgetKey(h), *left)
}

// budgetRefused returns the first record of recs whose step a budget
// stopped (code budget_exceeded).
func budgetRefused(recs []*state.StepState) (*state.StepState, bool) {
	for _, rec := range recs {
		if rec.Status == schemas.StepFailed && rec.Code == schemas.CodeBudgetExceeded {
			return rec, true
		}
	}
	return nil, false
}

// budgetStopped ends a run one of whose steps a budget stopped mid-step (a
// model call that would have crossed it was not made), once that step's
// wave is over: failed, with code budget_exceeded and the step's refusal,
// which names the limit, the spend and what the call asked.
func budgetStopped(h *state.RunHeader, sd *state.RunSpec, rec *state.StepState, now time.Time, ch *runChanges) {
	h.Status, h.Code = schemas.RunFailed, schemas.CodeBudgetExceeded
	h.Error = fmt.Sprintf("step %q: %s", rec.ID, rec.Error)
	if rest := len(sd.Waves) - h.Wave - 1; rest > 0 {
		h.Error += fmt.Sprintf("; the %d waves after wave %d were not started", rest, h.Wave+1)
	}
	h.FinishedAt = now
	ch.finished = true
}
