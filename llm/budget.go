package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/schemas"
)

// Spend is what model calls used: tokens (prompt and completion) and US
// dollars.
type Spend struct {
	Tokens int64   `json:"tokens"`
	USD    float64 `json:"usd"`
}

func (s Spend) add(o Spend) Spend { return Spend{Tokens: s.Tokens + o.Tokens, USD: s.USD + o.USD} }

// String writes the spend, "5100 tokens" or "5100 tokens ($0.012000)".
func (s Spend) String() string {
	if s.USD == 0 {
		return fmt.Sprintf("%d tokens", s.Tokens)
	}
	return fmt.Sprintf("%d tokens ($%.6f)", s.Tokens, s.USD)
}

// Budget is a limit on what the model calls of one scope may spend: a chat
// turn, a pipeline run, a client's day. A zero Tokens or USD is no limit of
// that kind.
type Budget struct {
	Scope  string        // what the budget is for, as errors name it: `turn 3 of conversation c1`, `run r7`
	Key    string        // its ledger key in the LLM bucket: letters, digits, '-', '_', '/', '=' and '.'
	Tokens int64         // the most tokens its calls may use, 0 for no limit
	USD    float64       // the most US dollars its calls may cost, 0 for no limit
	TTL    time.Duration // how long the ledger keeps the key after its first call (0: DefaultBudgetTTL)
}

// DefaultBudgetTTL is how long the ledger keeps a budget's key by default,
// as long as the mesh keeps runs and conversations.
const DefaultBudgetTTL = 7 * 24 * time.Hour

// Limited reports whether b limits anything.
func (b Budget) Limited() bool { return b.Tokens > 0 || b.USD > 0 }

// Limit is b's limits as a Spend.
func (b Budget) Limit() Spend { return Spend{Tokens: b.Tokens, USD: b.USD} }

func (b Budget) crossedBy(spent, asked Spend) bool {
	next := spent.add(asked)
	return b.Tokens > 0 && next.Tokens > b.Tokens || b.USD > 0 && next.USD > b.USD
}

// BudgetError is the refusal of a call that would cross a budget: the
// budget, what its scope had spent (calls in flight included) and what the
// call asked. errors.Is matches it to ErrBudgetExceeded.
type BudgetError struct {
	Budget Budget
	Spent  Spend
	Asked  Spend // the call's estimated prompt: its messages and tools, four bytes a token, priced
}

func (e *BudgetError) Error() string {
	var limits []string
	if e.Budget.Tokens > 0 {
		limits = append(limits, fmt.Sprintf("%d tokens", e.Budget.Tokens))
	}
	if e.Budget.USD > 0 {
		limits = append(limits, fmt.Sprintf("$%.6f", e.Budget.USD))
	}
	return fmt.Sprintf("%v: the budget of %s is %s; it has spent %s and the next model call asks about %s, so the call was not made (raise the budget: docs/llm.md#budgets)",
		ErrBudgetExceeded, e.Budget.Scope, strings.Join(limits, " and "), e.Spent, e.Asked)
}

// ErrorCode is budget_exceeded (schemas.CodeOf).
func (e *BudgetError) ErrorCode() string { return schemas.CodeBudgetExceeded }

// Is matches ErrBudgetExceeded.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExceeded }

// As gives the refusal as the mesh's coded error, code budget_exceeded, so
// an agent whose call was refused fails its task with that code.
func (e *BudgetError) As(target any) bool {
	if re, ok := target.(**schemas.ResultError); ok {
		*re = &schemas.ResultError{Code: schemas.CodeBudgetExceeded, Message: e.Error()}
		return true
	}
	return false
}

type budgetsKey struct{}

// WithBudget returns ctx with b added to the budgets its model calls
// count against. A Client's call reserves its estimated prompt in every
// budget first and is not made, failing with a *BudgetError, when that
// would cross one; when it returns, what it really used is charged
// instead. The ledger is the mesh's LLM bucket for a client built
// WithShared, else this process's memory. Budgets without a limit are
// left out.
func WithBudget(ctx context.Context, b Budget) context.Context {
	if !b.Limited() {
		return ctx
	}
	prev, _ := ctx.Value(budgetsKey{}).([]Budget)
	return context.WithValue(ctx, budgetsKey{}, append(slices.Clip(prev), b))
}

// BudgetsOf returns the budgets set on ctx with WithBudget, and the task's
// (schemas.WithTaskBudget, which the agent runtime sets from the task's
// budget: what is left of its run's), kept under the task's own key, or
// under the ledger the steps of its wave, or the calls of its chat turn,
// share (schemas.WithSharedTaskBudget, from the task's budget_key).
func BudgetsOf(ctx context.Context) []Budget {
	b, _ := ctx.Value(budgetsKey{}).([]Budget)
	if id, tb, ok := schemas.TaskBudgetOf(ctx); ok && (tb.Tokens > 0 || tb.USD > 0) {
		tb := Budget{Scope: "task " + id + " (what is left of its run's budget)", Key: "budget.task." + id, Tokens: tb.Tokens, USD: tb.USD, TTL: 24 * time.Hour}
		switch key := schemas.TaskBudgetKeyOf(ctx); {
		case strings.HasPrefix(key, schemas.TurnBudgetKeyPrefix):
			tb.Scope, tb.Key, tb.TTL = "the chat turn of "+id+" (the turn's budget, shared by its model calls and the agents its tool calls run)", key, 0
		case key != "":
			tb.Scope, tb.Key, tb.TTL = "the wave of "+id+" (what was left of its run's budget when the wave began, shared by the wave's steps)", key, 0
		}
		b = append(slices.Clip(b), tb)
	}
	return b
}

// budgeted makes the call under ctx's budgets: reserve, call, settle.
func (c *Client) budgeted(ctx context.Context, req Request, onDelta func(Delta)) (Response, Usage, error) {
	budgets := BudgetsOf(ctx)
	if len(budgets) == 0 {
		return c.call(ctx, req, onDelta)
	}
	sh := c.shared
	if sh == nil {
		sh = localShared // no mesh bucket: the budgets count in this process
	}
	asked := Spend{Tokens: estimatePrompt(req)}
	if p, ok := c.cfg.price(req.Model); ok {
		asked.USD = p.Cost(int(asked.Tokens), 0)
	}
	reserved, err := sh.reserve(ctx, budgets, asked)
	if err != nil {
		return Response{}, Usage{Model: req.Model}, err
	}
	resp, usage, err := c.call(ctx, req, onDelta)
	used := Spend{Tokens: int64(usage.Tokens.Prompt + usage.Tokens.Completion), USD: usage.Cost}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
	defer cancel()
	if serr := sh.charge(sctx, reserved, Spend{Tokens: used.Tokens - asked.Tokens, USD: used.USD - asked.USD}); serr != nil && err == nil {
		err = fmt.Errorf("%w: the call was made but its use (%s) could not be charged: %w", ErrInvalidConfig, used, serr)
	}
	return resp, usage, err
}

// Charge adds s to the ledger of every budget on ctx (WithBudget and the
// task's): use made elsewhere that the budgets pay for, such as what the
// agents a chat turn called report, so that the next call counts it.
func (c *Client) Charge(ctx context.Context, s Spend) error {
	budgets := BudgetsOf(ctx)
	if len(budgets) == 0 || s == (Spend{}) {
		return nil
	}
	sh := c.shared
	if sh == nil {
		sh = localShared
	}
	return sh.charge(ctx, budgets, s)
}

// reserve adds asked to every budget's ledger key, each with a
// compare-and-set, unless it would cross one: then what it reserved is
// given back and the refusal returned. It returns the budgets reserved in.
func (s *shared) reserve(ctx context.Context, budgets []Budget, asked Spend) ([]Budget, error) {
	var done []Budget
	for _, b := range budgets {
		var refused error
		err := s.update(ctx, b.Key, cmp(b.TTL, DefaultBudgetTTL), func(cur []byte) ([]byte, error) {
			var spent Spend
			if cur != nil {
				if err := json.Unmarshal(cur, &spent); err != nil {
					return nil, fmt.Errorf("%w: the ledger's %s does not decode (%v): delete the key", ErrInvalidConfig, b.Key, err)
				}
			}
			if b.crossedBy(spent, asked) {
				refused = &BudgetError{Budget: b, Spent: spent, Asked: asked}
				return nil, nil
			}
			return json.Marshal(spent.add(asked))
		})
		if err == nil {
			err = refused
		}
		if err != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
			defer cancel()
			return nil, joinErr(err, s.charge(sctx, done, Spend{Tokens: -asked.Tokens, USD: -asked.USD}))
		}
		done = append(done, b)
	}
	return done, nil
}

// charge adds d (negative to give a reservation back) to every budget's
// ledger key.
func (s *shared) charge(ctx context.Context, budgets []Budget, d Spend) error {
	for _, b := range budgets {
		err := s.update(ctx, b.Key, cmp(b.TTL, DefaultBudgetTTL), func(cur []byte) ([]byte, error) {
			var spent Spend
			if cur != nil {
				_ = json.Unmarshal(cur, &spent) // reserve refused a value that does not decode
			}
			return json.Marshal(spent.add(d))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Spent reads what the ledger (the mesh's bucket, else this process's)
// holds for a budget's key: the spend of
// its finished calls and the reservations of those in flight.
func (c *Client) Spent(ctx context.Context, key string) (Spend, error) {
	sh := c.shared
	if sh == nil {
		sh = localShared
	}
	var spent Spend
	err := sh.update(ctx, key, 0, func(cur []byte) ([]byte, error) {
		if cur != nil {
			return nil, json.Unmarshal(cur, &spent)
		}
		return nil, nil
	})
	return spent, err
}

func cmp(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func joinErr(err, cleanup error) error {
	if cleanup == nil {
		return err
	}
	return fmt.Errorf("%w (and giving back the reservation: %v)", err, cleanup)
}
