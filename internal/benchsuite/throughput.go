package benchsuite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
)

// ThroughputAgentName names the agent Throughput serves.
const ThroughputAgentName = "BenchThroughputAgent"

// ThroughputInstances is how many instances each side of Throughput runs.
const ThroughputInstances = 2

// Throughput compares the rate of no-op tasks through ThroughputInstances
// instances of an agent (default concurrency) with the rate of the
// hand-written JetStream worker (as many pull consumers sharing one
// durable): all tasks are published asynchronously, then every result is
// awaited. Both report units/s. The returned closer stops both.
func Throughput(ctx context.Context, env Env) (Pair, io.Closer, error) {
	var closers []io.Closer
	closeAll := closerFunc(func() error {
		var errs []error
		for _, c := range closers {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	})
	for range ThroughputInstances {
		c, err := ServeNoop(ctx, env, ThroughputAgentName)
		if err != nil {
			return Pair{}, nil, errors.Join(err, closeAll.Close())
		}
		closers = append(closers, c)
	}
	w, err := startRawWorker(ctx, env, throughputWorker, ThroughputInstances, noopWork)
	if err != nil {
		return Pair{}, nil, errors.Join(err, closeAll.Close())
	}
	closers = append(closers, w)
	return throughputPair(env, w), closeAll, nil
}

// throughputWorker names Throughput's baseline worker.
const throughputWorker = "throughput"

// noopWork is the throughput baseline worker's work.
func noopWork([]byte) ([]byte, error) { return []byte(`{"success":true}`), nil }

// throughputPair is the throughput comparison, the agent instances and
// the worker w running wherever they run.
func throughputPair(env Env, w *rawWorker) Pair {
	subj, _ := env.Names.Task(ThroughputAgentName) // the name is valid
	return Pair{
		ID:   "throughput",
		Name: fmt.Sprintf("throughput (no-op agent, %d instances)", ThroughputInstances), Unit: "task",
		Baseliner: fmt.Sprintf("nats.go JetStream work queue + %d pull workers + reply stream", ThroughputInstances),
		Baseline: func(b *testing.B) {
			burst(b, env, w.replyPrefix+">", func(i int) (*nats.Msg, error) {
				return w.task(fmt.Sprintf("%s%d", w.replyPrefix, i), []byte(`{}`)), nil
			})
		},
		Mesh: func(b *testing.B) {
			burst(b, env, env.Names.AgentResults(ThroughputAgentName), func(int) (*nats.Msg, error) {
				ev, err := bus.NewEvent(bus.TypeTaskRequested, "/bench", []byte(`{}`))
				if err != nil {
					return nil, err
				}
				return bus.Encode(subj, ev)
			})
		},
	}
}

// burst publishes b.N tasks made by task asynchronously and waits until as
// many replies arrived on replies; it reports the rate as units/s.
func burst(b *testing.B, env Env, replies string, task func(i int) (*nats.Msg, error)) {
	var got atomic.Int64
	done := make(chan struct{})
	n := int64(b.N)
	sub, err := env.NC.Subscribe(replies, func(*nats.Msg) {
		if got.Add(1) == n {
			close(done)
		}
	})
	if err != nil {
		fail(b, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := env.NC.Flush(); err != nil {
		fail(b, err)
	}
	b.ResetTimer()
	start := time.Now()
	acks := make([]jetstream.PubAckFuture, 0, b.N)
	for i := range b.N {
		msg, err := task(i)
		if err != nil {
			fail(b, err)
		}
		f, err := env.JS.PublishMsgAsync(msg)
		if err != nil {
			fail(b, fmt.Errorf("publishing task %d of %d: %w", i+1, b.N, err))
		}
		acks = append(acks, f)
	}
	// A task the server refused (a full stream) never gets a reply: say
	// so rather than wait for it.
	if err := asyncAcks(acks); err != nil {
		fail(b, fmt.Errorf("tasks: %w", err))
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		fail(b, fmt.Errorf("%d of %d replies after a minute", got.Load(), n))
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), PerSecMetric)
}
