package agents

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSlots(t *testing.T) {
	s := newSlots(2)
	ctx := context.Background()
	for range 2 {
		if err := s.acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if s.inUse() != 2 {
		t.Fatalf("inUse = %d; want 2", s.inUse())
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := s.acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire with every slot held = %v; want the ctx's deadline error", err)
	}
	if s.inUse() != 2 {
		t.Fatalf("a failed acquire holds a slot: inUse = %d", s.inUse())
	}
	got := make(chan error, 1)
	go func() { got <- s.acquire(ctx) }()
	s.release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a released slot did not go to the waiting acquire")
	}
}
