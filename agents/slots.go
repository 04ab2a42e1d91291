package agents

import "context"

// slots bounds how many tasks one instance runs at once: a task holds a
// slot from before it is taken off the consumer until its outcome is
// published. A task that waits on something outside the instance (another
// agent's answer) may give its slot back while it waits and take one again
// before it goes on, so a waiting caller never blocks the task it waits for.
type slots struct{ c chan struct{} }

func newSlots(n int) *slots { return &slots{c: make(chan struct{}, n)} }

// acquire takes a slot, waiting until one is free or ctx ends; it returns
// ctx's error in the second case, holding nothing.
func (s *slots) acquire(ctx context.Context) error {
	select {
	case s.c <- struct{}{}:
		return nil
	default:
	}
	select {
	case s.c <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release gives back a slot taken with acquire.
func (s *slots) release() { <-s.c }

// size is how many slots there are.
func (s *slots) size() int { return cap(s.c) }

// inUse is how many slots are held now.
func (s *slots) inUse() int { return len(s.c) }
