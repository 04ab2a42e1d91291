package schemas

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Budget limits what the model calls of a pipeline run may spend, theirs
// and those of the agents its steps call (the usage their results report).
// A zero field is no limit of that kind. A run that has reached its budget
// when a wave ends starts no more steps: it ends failed with code
// budget_exceeded (docs/llm.md#budgets).
type Budget struct {
	Tokens int64   `json:"tokens,omitempty" yaml:"tokens"` // prompt and completion tokens
	USD    float64 `json:"usd,omitempty" yaml:"usd"`       // US dollars, as the price table counts them
}

// Validate reports a negative or non-finite limit.
func (b Budget) Validate() error {
	var errs []error
	if b.Tokens < 0 {
		errs = append(errs, fmt.Errorf("budget.tokens %d is negative: give 0 for no limit or a positive limit", b.Tokens))
	}
	if b.USD < 0 || math.IsNaN(b.USD) || math.IsInf(b.USD, 0) {
		errs = append(errs, fmt.Errorf("budget.usd %v is not a positive amount of US dollars (0 for no limit)", b.USD))
	}
	return errors.Join(errs...)
}

// Reached reports whether u has used up b: a limit met or passed.
func (b Budget) Reached(u Usage) bool {
	return b.Tokens > 0 && int64(u.Tokens.Prompt+u.Tokens.Completion) >= b.Tokens || b.USD > 0 && u.Cost >= b.USD
}

// Left is what remains of b after u, as a budget (a limit of 0 stays 0:
// none); ok is false when b is reached.
func (b Budget) Left(u Usage) (left Budget, ok bool) {
	if b.Reached(u) {
		return Budget{}, false
	}
	if b.Tokens > 0 {
		left.Tokens = b.Tokens - int64(u.Tokens.Prompt+u.Tokens.Completion)
	}
	if b.USD > 0 {
		left.USD = b.USD - u.Cost
	}
	return left, true
}

// String writes the limits, "3000 tokens and $0.50".
func (b Budget) String() string {
	switch {
	case b.Tokens > 0 && b.USD > 0:
		return fmt.Sprintf("%d tokens and $%.6g", b.Tokens, b.USD)
	case b.USD > 0:
		return fmt.Sprintf("$%.6g", b.USD)
	default:
		return fmt.Sprintf("%d tokens", b.Tokens)
	}
}

type taskBudgetKey struct{}

type taskBudget struct {
	taskID string
	b      Budget
}

// WithTaskBudget returns ctx carrying the budget of task taskID (its
// TaskRequest.Budget): the agent runtime sets it on the context Execute
// gets, and package llm's clients count the task's model calls against it.
func WithTaskBudget(ctx context.Context, taskID string, b Budget) context.Context {
	return context.WithValue(ctx, taskBudgetKey{}, taskBudget{taskID: taskID, b: b})
}

// TaskBudgetOf returns the task budget WithTaskBudget set on ctx.
func TaskBudgetOf(ctx context.Context) (taskID string, b Budget, ok bool) {
	tb, ok := ctx.Value(taskBudgetKey{}).(taskBudget)
	return tb.taskID, tb.b, ok
}
