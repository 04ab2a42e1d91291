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
	if b, ok := c.turnLedger(conv, t); ok {
		ctx = llm.WithBudget(ctx, b)
	}
	if b, ok := c.clientLedger(ctx); ok {
		ctx = llm.WithBudget(ctx, b)
	}
	return ctx
}

// turnLedger is the budget of turn t of conversation conv, in its ledger
// (schemas.TurnBudgetKey): the turn's model calls reserve there, and so
// do the model calls of the agents its tool calls run (the tasks carry the
// key), so calls made at the same time share what is left.
func (c *Chat) turnLedger(conv string, t *chatTurn) (llm.Budget, bool) {
	l := c.spend.turn
	if l == (llm.Spend{}) {
		return llm.Budget{}, false
	}
	return llm.Budget{
		Scope:  fmt.Sprintf("turn %d of conversation %s", t.Number, conv),
		Key:    schemas.TurnBudgetKey(conv, t.Number),
		Tokens: l.Tokens, USD: l.USD,
	}, true
}

// clientLedger is the budget of the client identity ctx names for the
// current period.
func (c *Chat) clientLedger(ctx context.Context) (llm.Budget, bool) {
	l := c.spend.client
	if l == (llm.Spend{}) {
		return llm.Budget{}, false
	}
	period := c.spend.period
	if period <= 0 {
		period = 24 * time.Hour
	}
	who := bus.Requester(ctx)
	if who == "" {
		who = "anonymous"
	}
	start := time.Now().UTC().Truncate(period)
	return llm.Budget{
		Scope:  fmt.Sprintf("client %s for the %s from %s", who, period, start.Format(time.RFC3339)),
		Key:    "budget.client." + who + "." + strconv.FormatInt(start.Unix(), 10),
		Tokens: l.Tokens, USD: l.USD, TTL: period + time.Hour,
	}, true
}

// ledger is a model that can charge use made elsewhere to the budgets on
// a context and read a budget's ledger (*llm.Client).
type ledger interface {
	Charge(ctx context.Context, s llm.Spend) error
	Spent(ctx context.Context, key string) (llm.Spend, error)
}

// turnSpent reads what turn t's ledger holds before its tool calls run,
// so that chargeCalls can tell what their agents' model calls already put
// there; ok is false without a turn budget or when it cannot be read.
func (c *Chat) turnSpent(ctx context.Context, s *session) (llm.Spend, bool) {
	lg, ok := c.llm.(ledger)
	b, limited := c.turnLedger(s.conv, s.turn)
	if !ok || !limited {
		return llm.Spend{}, false
	}
	spent, err := lg.Spent(ctx, b.Key)
	if err != nil {
		c.log.WarnContext(ctx, "chat: reading the turn's ledger", "key", b.Key, "err", err)
		return llm.Spend{}, false
	}
	return spent, true
}

// chargeCalls charges what the agents of a turn's tool calls reported to
// the turn's and the client's budgets, so the turn's next model call
// counts it. The agents' model calls that reserved in the turn's ledger
// (the task's budget_key) are there already: the turn's ledger is charged
// only what the agents reported beyond what it gained since before
// (turnSpent; ok false: all of it), such as an agent's whose model does
// not count in the mesh. It is called once the calls are saved with the
// turn, so a resumed turn does not charge them again.
func (c *Chat) chargeCalls(ctx context.Context, s *session, recs []schemas.ToolCallRecord, before llm.Spend, ok bool) {
	lg, isLedger := c.llm.(ledger)
	if !isLedger || c.spend == (spendLimits{}) {
		return
	}
	var used schemas.Usage
	for _, r := range recs {
		used = used.Add(r.Usage)
	}
	spend := llm.Spend{Tokens: int64(used.Tokens.Prompt + used.Tokens.Completion), USD: used.Cost}
	if spend == (llm.Spend{}) {
		return
	}
	if b, limited := c.turnLedger(s.conv, s.turn); limited {
		extra := spend
		if after, read := c.turnSpent(ctx, s); ok && read {
			extra = llm.Spend{Tokens: max(0, spend.Tokens-(after.Tokens-before.Tokens)), USD: max(0, spend.USD-(after.USD-before.USD))}
		}
		if err := lg.Charge(llm.WithBudget(ctx, b), extra); err != nil {
			c.log.WarnContext(ctx, "chat: charging the agents' use to the turn's budget", "err", err)
		}
	}
	if b, limited := c.clientLedger(ctx); limited {
		if err := lg.Charge(llm.WithBudget(ctx, b), spend); err != nil {
			c.log.WarnContext(ctx, "chat: charging the agents' use to the client's budget", "err", err)
		}
	}
}

type taskBudgetKey struct{}

// taskLedger is the budget a turn's tool tasks carry: the turn's limits
// and the key of its ledger.
type taskLedger struct {
	b   schemas.Budget
	key string
}

// withTaskBudget returns ctx carrying turn t's budget for the agents it
// calls now (read by callAgent into each task): the turn's limits and its
// ledger's key, where the agents' model calls reserve beside the turn's
// own and each other's, so that tool calls run at the same time share
// what is left rather than each spending all of it.
func (c *Chat) withTaskBudget(ctx context.Context, s *session) context.Context {
	b, ok := c.turnLedger(s.conv, s.turn)
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, taskBudgetKey{}, taskLedger{b: schemas.Budget{Tokens: b.Tokens, USD: b.USD}, key: b.Key})
}

// taskBudget is the budget and ledger key withTaskBudget put on ctx, nil
// and "" for none.
func taskBudget(ctx context.Context) (*schemas.Budget, string) {
	tl, ok := ctx.Value(taskBudgetKey{}).(taskLedger)
	if !ok {
		return nil, ""
	}
	return &tl.b, tl.key
}

// budgetRefused returns the first of a turn's tool calls whose agent's
// model call the turn's budget refused (code budget_exceeded; its error
// names the limit, the spend and what the call asked): the turn ends
// there, as a pipeline run ends when a step's budget stops it.
func (c *Chat) budgetRefused(recs []schemas.ToolCallRecord) (schemas.ToolCallRecord, bool) {
	if c.spend.turn == (llm.Spend{}) {
		return schemas.ToolCallRecord{}, false
	}
	for _, r := range recs {
		if r.Code == schemas.CodeBudgetExceeded {
			return r, true
		}
	}
	return schemas.ToolCallRecord{}, false
}

// turnBudget is the turn budget a response reports, nil for none.
func (c *Chat) turnBudget() *schemas.Budget {
	if c.spend.turn == (llm.Spend{}) {
		return nil
	}
	return &schemas.Budget{Tokens: c.spend.turn.Tokens, USD: c.spend.turn.USD}
}
