package schemas_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/schemas"
)

// A task's budget_key must name a wave's ledger: an agent writes its
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
}
