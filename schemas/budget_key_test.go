package schemas_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/schemas"
)

// A task's budget_key must name a wave's or a turn's ledger: an agent writes its
// model calls' spend there, so no other key of the LLM bucket passes.
func TestValidBudgetKey(t *testing.T) {
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{schemas.RunBudgetKey("r-7", 0), true},
		{"budget.run.r7.w2", true},
		{schemas.RunBudgetKey("run with spaces:and*stars", 3), true},
		{"config.limits", false},
		{"budget.task.t1", false},
		{"budget.run.", false},
		{"budget.run..w1", false},
		{"budget.run.r7.", false},
		{"budget.run.r 7", false},
		{"budget.run." + strings.Repeat("r", 300), false},
		{schemas.TurnBudgetKey("c-1", 3), true},
		{schemas.TurnBudgetKey("conv with spaces", 1), true},
		{"budget.turn.", false},
		{"budget.turn.c1.", false},
		{"budget.client.anonymous.0", false},
	} {
		err := schemas.ValidBudgetKey(tc.key)
		if (err == nil) != tc.ok {
			t.Errorf("ValidBudgetKey(%q) = %v; want ok %v", tc.key, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, schemas.ErrInvalidBudgetKey) || schemas.CodeOf(err) != schemas.CodeInvalidRequest) {
			t.Errorf("ValidBudgetKey(%q) = %v; want ErrInvalidBudgetKey, code %s", tc.key, err, schemas.CodeInvalidRequest)
		}
	}
	if got := schemas.RunBudgetKey("a b", 1); got != "budget.run.a_b.w2" {
		t.Errorf("RunBudgetKey = %q", got)
	}
	if got := schemas.TurnBudgetKey("a b", 2); got != "budget.turn.a_b.2" {
		t.Errorf("TurnBudgetKey = %q", got)
	}
}

// FuzzValidBudgetKey: a task's budget_key (outside input) passes only as a
// key of the LLM bucket under the waves' prefix, which an agent may write,
// and every key RunBudgetKey makes passes.
func FuzzValidBudgetKey(f *testing.F) {
	f.Add("budget.run.r7.w1", "r7", 0)
	f.Add("budget.run..w1", "a b", 3)
	f.Add("config.limits", "", -1)
	f.Add("budget.run.\u00e9", "\u00e9t\u00e9", 2)
	f.Fuzz(func(t *testing.T, key, run string, wave int) {
		if schemas.ValidBudgetKey(key) == nil {
			rest, ok := strings.CutPrefix(key, schemas.RunBudgetKeyPrefix)
			if !ok || rest == "" || len(key) > 256 || strings.Contains(rest, "..") || strings.HasPrefix(rest, ".") || strings.HasSuffix(rest, ".") {
				t.Fatalf("ValidBudgetKey accepts %q", key)
			}
			for _, r := range rest {
				if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_/=.", r)) {
					t.Fatalf("ValidBudgetKey accepts %q, with %q", key, r)
				}
			}
		}
		if run == "" || strings.Contains(run, "..") || strings.HasPrefix(run, ".") || strings.HasSuffix(run, ".") || len(run) > 200 || wave < 0 {
			return // no run id the mesh accepts (bus.ValidateToken)
		}
		if k := schemas.RunBudgetKey(run, wave); schemas.ValidBudgetKey(k) != nil {
			t.Fatalf("RunBudgetKey(%q, %d) = %q, which ValidBudgetKey refuses: %v", run, wave, k, schemas.ValidBudgetKey(k))
		}
	})
}
