package schemas

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
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
	taskID, key string
	b           Budget
}

// RunBudgetKeyPrefix starts the ledger keys of pipeline waves
// (TaskRequest.BudgetKey): budget.run.<run>.w<wave>.
const RunBudgetKeyPrefix = "budget.run."

// TurnBudgetKeyPrefix starts the ledger keys of chat turns
// (TaskRequest.BudgetKey): budget.turn.<conversation>.<turn>.
const TurnBudgetKeyPrefix = "budget.turn."

// maxBudgetKey bounds a ledger key a task names.
const maxBudgetKey = 256

// ErrInvalidBudgetKey is a TaskRequest.BudgetKey that is no wave's or
// turn's ledger.
var ErrInvalidBudgetKey = NewError(CodeInvalidRequest, "invalid budget_key")

// RunBudgetKey is the ledger key of wave (from 0) of run: the model calls
// of its steps share it (TaskRequest.BudgetKey). Bytes of the run id a KV
// key cannot hold become '_'.
func RunBudgetKey(run string, wave int) string {
	return fmt.Sprintf("%s%s.w%d", RunBudgetKeyPrefix, kvKeyToken(run), wave+1)
}

// TurnBudgetKey is the ledger key of turn (from 1) of conversation conv:
// the turn's model calls and those of the agents its tool calls run, at
// the same time or not, share it (TaskRequest.BudgetKey). Bytes of the
// conversation id a KV key cannot hold become '_'.
func TurnBudgetKey(conv string, turn int) string {
	return fmt.Sprintf("%s%s.%d", TurnBudgetKeyPrefix, kvKeyToken(conv), turn)
}

// kvKeyToken is id with the bytes a KV key cannot hold as '_'.
func kvKeyToken(id string) string {
	return strings.Map(func(r rune) rune {
		if kvKeyRune(r) {
			return r
		}
		return '_'
	}, id)
}

func kvKeyRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '/' || r == '=' || r == '.'
}

// ValidBudgetKey reports a key that is no wave's or turn's ledger: one
// under neither RunBudgetKeyPrefix nor TurnBudgetKeyPrefix, too long, with
// an empty token or a byte a KV key cannot hold. An agent checks it before
// its model calls write there.
func ValidBudgetKey(key string) error {
	rest, ok := strings.CutPrefix(key, RunBudgetKeyPrefix)
	if !ok {
		rest, ok = strings.CutPrefix(key, TurnBudgetKeyPrefix)
	}
	bad := !ok || rest == "" || len(key) > maxBudgetKey || strings.Contains(rest, "..") || strings.HasSuffix(rest, ".") || strings.HasPrefix(rest, ".")
	for _, r := range rest {
		bad = bad || !kvKeyRune(r)
	}
	if bad {
		return fmt.Errorf("%w %q: want %s<run>.w<wave> or %s<conversation>.<turn> (letters, digits, '-', '_', '/', '=' and '.', at most %d bytes), as the orchestrator sends it", ErrInvalidBudgetKey, Clip(key, 80), RunBudgetKeyPrefix, TurnBudgetKeyPrefix, maxBudgetKey)
	}
	return nil
}

// WithSharedTaskBudget is WithTaskBudget for model calls whose budget's
// ledger is key, shared with other steps of the same pipeline wave or the
// other tool calls and model calls of the same chat turn
// (TaskRequest.BudgetKey), rather than a task's own: an agent's task
// (who: "task <id>") or a router's or evaluator's call in the
// orchestrator. who names them in errors (TaskBudgetOf returns it).
func WithSharedTaskBudget(ctx context.Context, who, key string, b Budget) context.Context {
	return context.WithValue(ctx, taskBudgetKey{}, taskBudget{taskID: who, key: key, b: b})
}

// TaskBudgetKeyOf returns the shared ledger key WithSharedTaskBudget set
// on ctx, "" for none.
func TaskBudgetKeyOf(ctx context.Context) string {
	tb, _ := ctx.Value(taskBudgetKey{}).(taskBudget)
	return tb.key
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
