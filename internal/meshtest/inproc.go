package meshtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/orchestrator"
)

// ReadyTimeout is how long Run, Serve and RunOrchestrator wait for readiness.
const ReadyTimeout = 10 * time.Second

// Agents is a set of agent runtimes of one test. Those still running when
// the test ends are stopped together, since each drains for a while. The
// zero value is ready to use.
type Agents struct {
	mu    sync.Mutex
	stops []func()
}

// Run serves a on nc until stop is called or the test ends, and returns
// once the runtime is ready. stop may be called more than once.
func (g *Agents) Run(t testing.TB, nc *nats.Conn, a agents.Agent, opts ...agents.Option) (stop func()) {
	t.Helper()
	rt, err := agents.NewRuntime(nc, a, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	g.mu.Lock()
	if len(g.stops) == 0 {
		t.Cleanup(g.stopAll)
	}
	g.stops = append(g.stops, stop)
	g.mu.Unlock()
	select {
	case <-rt.Ready():
	case err := <-done:
		t.Fatalf("agent %s stopped: %v", a.Contract().Name, err)
	case <-time.After(ReadyTimeout):
		t.Fatalf("agent %s not ready after %s", a.Contract().Name, ReadyTimeout)
	}
	return stop
}

func (g *Agents) stopAll() {
	g.mu.Lock()
	stops := g.stops
	g.stops = nil
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range stops {
		wg.Go(s)
	}
	wg.Wait()
}

// Serve serves a on nc until stop is called or the test ends, and returns
// once the runtime is ready.
func Serve(t testing.TB, nc *nats.Conn, a agents.Agent, opts ...agents.Option) (stop func()) {
	t.Helper()
	var g Agents
	return g.Run(t, nc, a, opts...)
}

// RunOrchestrator runs o until the test ends and returns once it is ready.
func RunOrchestrator(t testing.TB, o *orchestrator.Orchestrator) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- o.RunReady(ctx, func() { close(ready) }) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("orchestrator stopped: %v", err)
	case <-time.After(ReadyTimeout):
		t.Fatalf("orchestrator not ready after %s", ReadyTimeout)
	}
}
