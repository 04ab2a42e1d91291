package pipelinespec_test

import (
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

func TestLoopTaskID(t *testing.T) {
	for _, nonce := range []string{"", schemas.NewRunNonce()} {
		for _, i := range []int{0, 7, 999_999} {
			id := pipelinespec.LoopTaskID("run-1", "each", i, nonce)
			if got, ok := pipelinespec.LoopItem("run-1", "each", id, nonce); !ok || got != i {
				t.Errorf("LoopItem(%q) = %d, %v; want %d", id, got, ok, i)
			}
		}
		for _, id := range []string{"run-1-each-1", "run-1-each-1-", "run-1-each-1-x", "run-1-each-1--1", "run-1-each-1-1234567", "run-1-each-1-07", "run-2-each-1-3"} {
			if i, ok := pipelinespec.LoopItem("run-1", "each", id, nonce); ok {
				t.Errorf("LoopItem(%q) = %d, want no item", id, i)
			}
		}
	}
	// A run's item id read with no nonce, or another run's nonce, names no item.
	tagged := pipelinespec.LoopTaskID("run-1", "each", 3, schemas.NewRunNonce())
	for _, nonce := range []string{"", schemas.NewRunNonce()} {
		if i, ok := pipelinespec.LoopItem("run-1", "each", tagged, nonce); ok {
			t.Errorf("LoopItem(%q) with nonce %q = %d, want no item", tagged, nonce, i)
		}
	}
	if i, ok := pipelinespec.LoopItem("run-1", "each", "run-1-each-1-3", schemas.NewRunNonce()); ok {
		t.Errorf("an untagged item id under a nonce = %d, want no item", i)
	}
}

// A run without a nonce (stored before nonces) keeps its ids; a run with
// one has ids no one computes without the nonce, each task's tag its own.
func TestStepTaskIDTag(t *testing.T) {
	if got := pipelinespec.StepTaskID("run-1", "a", 1, ""); got != "run-1-a-1" {
		t.Errorf("untagged id %q, want run-1-a-1", got)
	}
	n1, n2 := schemas.NewRunNonce(), schemas.NewRunNonce()
	if n1 == n2 || len(n1) != 26 {
		t.Fatalf("nonces %q %q: want two different 26-character nonces", n1, n2)
	}
	seen := map[string]bool{}
	for _, id := range []string{
		pipelinespec.StepTaskID("run-1", "a", 1, n1), pipelinespec.StepTaskID("run-1", "a", 2, n1), pipelinespec.StepTaskID("run-1", "b", 1, n1),
		pipelinespec.StepTaskID("run-1", "a", 1, n2), pipelinespec.LoopTaskID("run-1", "a", 0, n1),
	} {
		if seen[id] {
			t.Errorf("id %q made twice", id)
		}
		seen[id] = true
		if err := bus.ValidateToken("task id", id); err != nil {
			t.Errorf("id %q: %v", id, err)
		}
	}
	a1, b1 := pipelinespec.StepTaskID("run-1", "a", 1, n1), pipelinespec.StepTaskID("run-1", "b", 1, n1)
	if !strings.HasPrefix(a1, "run-1-a-1-") || strings.TrimPrefix(a1, "run-1-a-1-") == strings.TrimPrefix(b1, "run-1-b-1-") {
		t.Errorf("ids %q and %q: want <run>-<step>-<attempt>-<tag>, a tag per task", a1, b1)
	}
	if pipelinespec.StepTaskID("run-1", "a", 1, n1) != a1 {
		t.Error("the same run, step, attempt and nonce gave another id")
	}
}

// FuzzLoopItem: a task id from a result (outside input) names an item of
// a loop step only when LoopTaskID makes it.
func FuzzLoopItem(f *testing.F) {
	f.Add("run-1", "each", "run-1-each-1-12", "")
	f.Add("r", "s", "r-s-1-", "")
	f.Add("r", "s", "r-s-1-4-abcdefghijklmnop", "n")
	f.Fuzz(func(t *testing.T, run, step, task, nonce string) {
		if i, ok := pipelinespec.LoopItem(run, step, task, nonce); ok && pipelinespec.LoopTaskID(run, step, i, nonce) != task {
			t.Fatalf("LoopItem(%q) = %d, but item %d's task id is %q", task, i, i, pipelinespec.LoopTaskID(run, step, i, nonce))
		}
	})
}
