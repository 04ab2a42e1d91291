package llm_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// Ten calls from five processes race for one budget that has room for
// three: the reservations are compare-and-set on one key, so exactly three
// calls are made and the others are refused with a *BudgetError; the
// ledger holds the three calls' use, and its key keeps its TTL after
// being rewritten.
func TestBudgetReservationsHoldUnderContention(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	prov := llmtest.New(t)
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "hi"}}
	asked := int64(llm.EstimateTokens(msgs[0]))
	prov.Handle(func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "ok", Usage: schemas.Tokens{Prompt: int(asked)}} // exactly what was reserved
	})
	budget := llm.Budget{Scope: "test", Key: "budget.test.contention", Tokens: 3 * asked, TTL: time.Hour}
	ctx := llm.WithBudget(context.Background(), budget)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		made     int
		refusals []error
	)
	for range 5 {
		c := instance(t, srv, prov.Config())
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := c.Chat(ctx, llm.Request{Messages: msgs})
				mu.Lock()
				defer mu.Unlock()
				var be *llm.BudgetError
				switch {
				case err == nil:
					made++
				case errors.As(err, &be) && errors.Is(err, llm.ErrBudgetExceeded):
					refusals = append(refusals, err)
				default:
					t.Errorf("call failed otherwise: %v", err)
				}
			}()
		}
	}
	wg.Wait()
	if made != 3 || len(refusals) != 7 || len(prov.Requests()) != 3 {
		t.Fatalf("%d calls made, %d refused, %d reached the model; want 3, 7, 3", made, len(refusals), len(prov.Requests()))
	}
	spent, err := instance(t, srv, prov.Config()).Spent(context.Background(), budget.Key)
	if err != nil || spent.Tokens != 3*asked {
		t.Fatalf("ledger %+v, %v; want %d tokens", spent, err, 3*asked)
	}
	msg, err := res.LLM.Get(context.Background(), budget.Key)
	if err != nil || msg.Revision() < 2 {
		t.Fatalf("budget key: %v (revision %d); want it rewritten", err, msg.Revision())
	}
	st, err := srv.JetStream(t).Stream(context.Background(), "KV_"+srv.Names().LLMBucket())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := st.GetLastMsgForSubject(context.Background(), "$KV."+srv.Names().LLMBucket()+"."+budget.Key)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get("Nats-TTL") == "" {
		t.Fatalf("the budget key's latest revision has no TTL (%v, headers %v): it would outlive its budget", err, raw.Header)
	}
}
