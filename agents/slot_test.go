package agents

import (
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
)

// A task that gives its slot back and takes one again never blocks: with
// every slot taken it goes on, and the next slot that frees is its own, so
// the semaphore is never over-released.
func TestSemSlotGivesBackAndTakesAgain(t *testing.T) {
	sem := make(chan struct{}, 1)
	sem <- struct{}{} // the task's own slot
	s := newSemSlot(sem)
	s.release()
	if len(sem) != 0 {
		t.Fatalf("release left %d slots taken, want 0", len(sem))
	}
	sem <- struct{}{} // another task takes the free slot meanwhile
	done := make(chan struct{})
	go func() { s.acquire(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("acquire blocked while every slot was taken")
	}
	<-sem // the other task ends: its slot goes to s
	if !fixture.Within(time.Second, func() bool { return len(sem) == 1 }) {
		t.Fatal("the freed slot did not go to the waiting task")
	}
	s.release()
	if len(sem) != 0 {
		t.Fatalf("after the task ended %d slots are taken, want 0", len(sem))
	}
	// Ending while still waiting for a slot gives nothing back.
	sem <- struct{}{}
	s2 := &semSlot{sem: sem}
	s2.acquire()
	s2.release()
	if len(sem) != 1 {
		t.Fatalf("a task that never got its slot back released one: %d taken, want 1", len(sem))
	}
}
