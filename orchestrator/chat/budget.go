package chat

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
)

// spendLimits are the budgets a turn's model calls count against: the
// turn's own and its client's for the current period. The ledger is the
// mesh's LLM bucket, so every replica counts together; the model must be
// an *llm.Client built WithShared on it.
type spendLimits struct {
	turn   llm.Spend
	client llm.Spend
	period time.Duration
}

// WithTurnBudget stops a turn whose next model call would take its model
// calls past tokens or usd (0: no limit of that kind): the call is not
// made and the turn ends failed with code budget_exceeded, naming the
// limit, what was spent and what the call asked.
func WithTurnBudget(tokens int64, usd float64) Option {
	return func(ch *Chat) { ch.spend.turn = llm.Spend{Tokens: tokens, USD: usd} }
}

// WithClientBudget limits what the turns of each client identity (the
// requester a secure mesh names; "anonymous" on an open mesh) spend on
// model calls per period (a day when 0), periods counted from the Unix
// epoch in UTC.
func WithClientBudget(tokens int64, usd float64, period time.Duration) Option {
	return func(ch *Chat) {
		ch.spend.client = llm.Spend{Tokens: tokens, USD: usd}
		ch.spend.period = period
	}
}

// withBudgets returns ctx with the budgets of turn t of conversation conv.
func (c *Chat) withBudgets(ctx context.Context, conv string, t *chatTurn) context.Context {
	if l := c.spend.turn; l != (llm.Spend{}) {
		ctx = llm.WithBudget(ctx, llm.Budget{
			Scope:  fmt.Sprintf("turn %d of conversation %s", t.Number, conv),
			Key:    "budget.turn." + conv + "." + strconv.Itoa(t.Number),
			Tokens: l.Tokens, USD: l.USD,
		})
	}
	if l := c.spend.client; l != (llm.Spend{}) {
		period := c.spend.period
		if period <= 0 {
			period = 24 * time.Hour
		}
		who := bus.Requester(ctx)
		if who == "" {
			who = "anonymous"
		}
		start := time.Now().UTC().Truncate(period)
		ctx = llm.WithBudget(ctx, llm.Budget{
			Scope:  fmt.Sprintf("client %s for the %s from %s", who, period, start.Format(time.RFC3339)),
			Key:    "budget.client." + who + "." + strconv.FormatInt(start.Unix(), 10),
			Tokens: l.Tokens, USD: l.USD, TTL: period + time.Hour,
		})
	}
	return ctx
}

// charger is a model that can charge use made elsewhere to the budgets on
// a context (*llm.Client).
type charger interface {
	Charge(ctx context.Context, s llm.Spend) error
}

// chargeCalls charges what the agents of a turn's tool calls reported to
// the turn's and the client's budgets, so the turn's next model call
// counts it. It is called once the calls are saved with the turn, so a
// resumed turn does not charge them again.
func (c *Chat) chargeCalls(ctx context.Context, s *session, recs []schemas.ToolCallRecord) {
	ch, ok := c.llm.(charger)
	if !ok || c.spend == (spendLimits{}) {
		return
	}
	var used schemas.Usage
	for _, r := range recs {
		used = used.Add(r.Usage)
	}
	spend := llm.Spend{Tokens: int64(used.Tokens.Prompt + used.Tokens.Completion), USD: used.Cost}
	if err := ch.Charge(c.withBudgets(ctx, s.conv, s.turn), spend); err != nil {
		c.log.WarnContext(ctx, "chat: charging the agents' use to the turn's budgets", "err", err)
	}
}

type taskBudgetKey struct{}

// withTaskBudget returns ctx carrying what is left of turn t's budget for
// the agents it calls now (read by callAgent into each task).
func (c *Chat) withTaskBudget(ctx context.Context, t *chatTurn) context.Context {
	limit := schemas.Budget{Tokens: c.spend.turn.Tokens, USD: c.spend.turn.USD}
	if limit == (schemas.Budget{}) {
		return ctx
	}
	left, ok := limit.Left(t.Usage)
	if !ok {
		left = schemas.Budget{Tokens: 1} // nothing is left: any model call of the agent's crosses it
	}
	return context.WithValue(ctx, taskBudgetKey{}, &left)
}

// taskBudget is the budget withTaskBudget put on ctx, nil for none.
func taskBudget(ctx context.Context) *schemas.Budget {
	b, _ := ctx.Value(taskBudgetKey{}).(*schemas.Budget)
	return b
}

// turnBudget is the turn budget a response reports, nil for none.
func (c *Chat) turnBudget() *schemas.Budget {
	if c.spend.turn == (llm.Spend{}) {
		return nil
	}
	return &schemas.Budget{Tokens: c.spend.turn.Tokens, USD: c.spend.turn.USD}
}
