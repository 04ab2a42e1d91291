package schemas_test

import (
	"testing"

	"github.com/agentmesh/agentmesh/schemas"
)

func TestLoopTaskID(t *testing.T) {
	for _, i := range []int{0, 7, 999_999} {
		id := schemas.LoopTaskID("run-1", "each", i)
		if got, ok := schemas.LoopItem("run-1", "each", id); !ok || got != i {
			t.Errorf("LoopItem(%q) = %d, %v; want %d", id, got, ok, i)
		}
	}
	for _, id := range []string{"run-1-each-1", "run-1-each-1-", "run-1-each-1-x", "run-1-each-1--1", "run-1-each-1-1234567", "run-1-each-1-07", "run-2-each-1-3"} {
		if i, ok := schemas.LoopItem("run-1", "each", id); ok {
			t.Errorf("LoopItem(%q) = %d, want no item", id, i)
		}
	}
}

// FuzzLoopItem: a task id from a result (outside input) names an item of
// a loop step only when LoopTaskID makes it.
func FuzzLoopItem(f *testing.F) {
	f.Add("run-1", "each", "run-1-each-1-12")
	f.Add("r", "s", "r-s-1-")
	f.Fuzz(func(t *testing.T, run, step, task string) {
		if i, ok := schemas.LoopItem(run, step, task); ok && schemas.LoopTaskID(run, step, i) != task {
			t.Fatalf("LoopItem(%q) = %d, but item %d's task id is %q", task, i, i, schemas.LoopTaskID(run, step, i))
		}
	})
}
