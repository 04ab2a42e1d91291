package agents

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// consume takes tasks off the agent's consumers (its own and, when it
// serves a version, its version's) while ctx lives and returns once every
// task it took has finished.
//
// Each consumer has one pull open (jetstream Messages, see pull) asking
// for up to one task more than there are slots, topped up before it runs
// dry, so a slot that frees takes its next task without a round trip to
// the server. A task is taken off a prefetch only once a slot is free, so
// an instance never runs more than its concurrency and never holds more
// than concurrency+1 tasks it has not started from each consumer. When
// ctx ends, the prefetched tasks that never started are handed back (nak,
// no delay) for another instance to take at once.
func (r *Runtime) consume(ctx context.Context, conss ...jetstream.Consumer) {
	var wg sync.WaitGroup
	defer wg.Wait()
	idle := make(chan jetstream.Msg)  // unbuffered: a send succeeds only to a waiting worker
	tasks := make(chan jetstream.Msg) // unbuffered: a puller hands a task over once a slot is free
	var pulls sync.WaitGroup
	defer pulls.Wait()
	for _, cons := range conss {
		pulls.Go(func() { r.pull(ctx, cons, tasks) })
	}
	for {
		if err := r.slots.acquire(ctx); err != nil {
			return
		}
		var msg jetstream.Msg
		select {
		case msg = <-tasks:
		case <-ctx.Done():
			r.slots.release()
			return
		}
		select {
		case idle <- msg: // a worker that finished its task takes it
		default:
			wg.Add(1)
			go r.work(ctx, msg, idle, &wg)
		}
	}
}

// pull keeps a pull of cons open while ctx lives and hands its tasks to
// consume on tasks, opening a new pull when one fails.
func (r *Runtime) pull(ctx context.Context, cons jetstream.Consumer, tasks chan<- jetstream.Msg) {
	failures := 0
	for ctx.Err() == nil {
		// One more than the slots, topped up once at most one is still
		// asked for: a slot that frees finds its task already here (even
		// at concurrency 1), and the server gets one pull request per
		// batch of tasks rather than one per task.
		ahead := r.slots.size() + 1
		it, err := cons.Messages(jetstream.PullMaxMessages(ahead), jetstream.PullThresholdMessages(min(2, ahead)))
		if err == nil {
			err = r.feed(ctx, it, tasks)
		}
		if err == nil || ctx.Err() != nil {
			failures = 0
			continue
		}
		failures++
		r.log.Warn("taking tasks", "err", err)
		select {
		case <-time.After(min(time.Duration(failures)*100*time.Millisecond, 2*time.Second)):
		case <-ctx.Done():
		}
	}
}

// feed hands each task of it to consume as slots free up, until ctx ends
// (it returns nil after handing back the prefetch) or the pull fails (it
// returns why, for pull to open a new one).
func (r *Runtime) feed(ctx context.Context, it jetstream.MessagesContext, tasks chan<- jetstream.Msg) error {
	stopDrain := context.AfterFunc(ctx, it.Drain)
	defer stopDrain()
	for {
		msg, err := it.Next()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				r.handBack(it)
				return nil
			case errors.Is(err, jetstream.ErrNoHeartbeat):
				// The pull is re-issued by the iterator itself.
				r.log.Debug("pull heartbeat missed", "err", err)
				continue
			}
			it.Stop()
			return err
		}
		if ctx.Err() == nil {
			select {
			case tasks <- msg:
				continue
			case <-ctx.Done():
			}
		}
		// Draining: the iterator hands out what it prefetched.
		_ = msg.Nak()
		r.handBack(it)
		return nil
	}
}

// work handles msg, then each task consume hands it on idle, until ctx
// ends. A worker outlives its task so that the next one runs on a
// goroutine whose stack has already grown to what handling a task takes,
// rather than growing a new one's (a stack copy or two per task). There
// are at most as many workers as tasks ever ran at once on the instance.
func (r *Runtime) work(ctx context.Context, msg jetstream.Msg, idle <-chan jetstream.Msg, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		s := newSemSlot(r.slots.c)
		r.handle(msg, s)
		s.release()
		select {
		case msg = <-idle:
		case <-ctx.Done():
			return
		}
	}
}

// handBack naks every task still prefetched by a drained iterator so that
// another instance takes it without waiting for the ack deadline.
func (r *Runtime) handBack(it jetstream.MessagesContext) {
	it.Drain()
	for {
		msg, err := it.Next(jetstream.NextMaxWait(shutdownTimeout))
		if err != nil {
			return
		}
		if err := msg.Nak(); err != nil {
			r.log.Debug("handing back a prefetched task", "err", err)
		}
	}
}
