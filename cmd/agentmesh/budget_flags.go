package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
)

// budgetFlags are the chat loop's budgets (docs/llm.md#budgets).
type budgetFlags struct {
	turnTokens, clientTokens int64
	turnUSD, clientUSD       float64
	clientPeriod             time.Duration
}

func (b *budgetFlags) register(f *pflag.FlagSet) {
	f.Int64Var(&b.turnTokens, "turn-budget-tokens", 0, "most tokens a chat turn's model calls may use; the call that would cross it is not made and the turn ends budget_exceeded (0: no limit)")
	f.Float64Var(&b.turnUSD, "turn-budget-usd", 0, "most US dollars a chat turn's model calls may cost (0: no limit)")
	f.Int64Var(&b.clientTokens, "client-budget-tokens", 0, "most tokens the chat turns of one client identity may use per --client-budget-period (0: no limit)")
	f.Float64Var(&b.clientUSD, "client-budget-usd", 0, "most US dollars the chat turns of one client identity may cost per --client-budget-period (0: no limit)")
	f.DurationVar(&b.clientPeriod, "client-budget-period", 24*time.Hour, "the period of the client budgets, counted from midnight UTC")
}

func (b budgetFlags) set() bool {
	return b.turnTokens != 0 || b.turnUSD != 0 || b.clientTokens != 0 || b.clientUSD != 0
}

func (b budgetFlags) chatOptions() ([]chat.Option, error) {
	if b.turnTokens < 0 || b.turnUSD < 0 || b.clientTokens < 0 || b.clientUSD < 0 {
		return nil, fmt.Errorf("a budget is negative (--turn-budget-tokens %d, --turn-budget-usd %g, --client-budget-tokens %d, --client-budget-usd %g): give 0 for no limit or a positive limit",
			b.turnTokens, b.turnUSD, b.clientTokens, b.clientUSD)
	}
	if b.clientPeriod < time.Second {
		return nil, fmt.Errorf("--client-budget-period %s is below a second: give a period such as 24h", b.clientPeriod)
	}
	return []chat.Option{
		chat.WithTurnBudget(b.turnTokens, b.turnUSD),
		chat.WithClientBudget(b.clientTokens, b.clientUSD, b.clientPeriod),
	}, nil
}

// declareRateLimits writes AGENTMESH_LLM_LIMITS, when set, to the mesh's
// LLM bucket, where every process's model calls read them.
func declareRateLimits(ctx context.Context, shared jetstream.KeyValue) error {
	l, ok, err := llm.RateLimitsFromEnv()
	if err != nil || !ok {
		return err
	}
	if shared == nil {
		return fmt.Errorf("%s is set but this identity cannot see the mesh's LLM bucket: declare the limits from a process that can (agentmesh up, or the orchestrator)", llm.EnvRateLimits)
	}
	return llm.DeclareRateLimits(ctx, shared, l)
}
