package agents_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/schemas"
)

// gated runs each task until release is closed, recording which instance
// ran it and the most tasks it ever ran at once.
type gated struct {
	release chan struct{}
	started chan string

	running, peak atomic.Int32
	mu            sync.Mutex
	ranBy         map[string]string // task id -> instance
}

func newGated() *gated {
	return &gated{release: make(chan struct{}), started: make(chan string, 64), ranBy: map[string]string{}}
}

func (g *gated) agent(name, instance string) agents.Agent {
	return agents.Func(schemas.AgentContract{Name: name, Capability: schemas.CapAnalysis, Description: "waits for a gate"},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			n := g.running.Add(1)
			defer g.running.Add(-1)
			for {
				p := g.peak.Load()
				if n <= p || g.peak.CompareAndSwap(p, n) {
					break
				}
			}
			g.mu.Lock()
			g.ranBy[ec.Instruction()] = instance
			g.mu.Unlock()
			g.started <- ec.Instruction()
			select {
			case <-g.release:
			case <-ctx.Done():
				return schemas.AgentResult{}, ctx.Err()
			}
			return schemas.AgentResult{Success: true, Summary: "done"}, nil
		})
}

func (g *gated) waitStarted(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-g.started:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d tasks started within 10s", i, n)
		}
	}
}

// TestRuntimeConcurrencyBound: with more tasks queued than slots, an
// instance never runs more than its concurrency at once, and a freed slot
// goes on to the next task.
func TestRuntimeConcurrencyBound(t *testing.T) {
	m := newMesh(t)
	g := newGated()
	m.serve(t, g.agent("Bounded", "b1"), agents.WithConcurrency(2))
	results, err := m.nc.SubscribeSync("mesh.result.>")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		m.publish(t, "Bounded", task(t, schemas.TaskRequest{Instruction: string(rune('a' + i))}))
	}
	g.waitStarted(t, 2)
	// Give the prefetched tasks every chance to start if the bound leaked.
	time.Sleep(200 * time.Millisecond)
	if n := g.running.Load(); n != 2 {
		t.Fatalf("running %d tasks with concurrency 2 and 7 queued; want 2", n)
	}
	close(g.release)
	g.waitStarted(t, 5)
	for i := range 7 {
		if r := next(t, results); !r.Result.Success {
			t.Fatalf("task %d: %+v", i, r.Result)
		}
	}
	if p := g.peak.Load(); p != 2 {
		t.Errorf("peak concurrency %d; want 2", p)
	}
}

// TestRuntimeDrainHandsBackPrefetch: tasks an instance prefetched but never
// started go to another instance as soon as the first one drains, not
// after the ack wait (30s) runs out.
func TestRuntimeDrainHandsBackPrefetch(t *testing.T) {
	m := newMesh(t)
	g := newGated()
	_, stopA := m.start(t, g.agent("Handback", "a"), agents.WithConcurrency(1), agents.WithAckWait(30*time.Second))
	results, err := m.nc.SubscribeSync("mesh.result.>")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t1", "t2", "t3"} {
		m.publish(t, "Handback", task(t, schemas.TaskRequest{Instruction: id}))
	}
	g.waitStarted(t, 1)
	stopped := make(chan error, 1)
	go func() { stopped <- stopA() }()
	time.AfterFunc(200*time.Millisecond, func() { close(g.release) })
	if err := <-stopped; err != nil {
		t.Fatalf("Run after drain = %v; want nil", err)
	}
	if r := next(t, results); !r.Result.Success {
		t.Fatalf("in-flight task: %+v", r.Result)
	}
	start := time.Now()
	m.serve(t, g.agent("Handback", "b"), agents.WithConcurrency(1))
	for i := range 2 {
		if r := next(t, results); !r.Result.Success {
			t.Fatalf("handed-back task %d: %+v", i, r.Result)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("handed-back tasks took %s; want well under the 30s ack wait", d)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.ranBy) != 3 || g.ranBy["t1"] != "a" || g.ranBy["t2"] != "b" || g.ranBy["t3"] != "b" {
		t.Errorf("tasks ran on %v; want t1 on a, t2 and t3 on b", g.ranBy)
	}
}

// TestRuntimeKeepsLongTaskInProgress: a task running four times the ack
// wait is not handed to another instance, because the runtime tells the
// server it is still in progress.
func TestRuntimeKeepsLongTaskInProgress(t *testing.T) {
	m := newMesh(t)
	g := newGated()
	for _, id := range []string{"k1", "k2"} {
		m.serve(t, g.agent("Longer", id), agents.WithConcurrency(1), agents.WithAckWait(300*time.Millisecond))
	}
	results, err := m.nc.SubscribeSync("mesh.result.>")
	if err != nil {
		t.Fatal(err)
	}
	// The runtime's "still in progress" acks (+WPI, one each third of the
	// ack wait): twelve of them span four ack waits, each of which would
	// have handed the task to k2 without them.
	var progress atomic.Int64
	acks, err := m.nc.Subscribe("$JS.ACK.>", func(msg *nats.Msg) {
		if string(msg.Data) == "+WPI" {
			progress.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer acks.Unsubscribe()
	m.publish(t, "Longer", task(t, schemas.TaskRequest{Instruction: "long"}))
	g.waitStarted(t, 1)
	fixture.Eventually(t, "twelve in-progress acks of the long task", func() bool { return progress.Load() >= 12 })
	select {
	case again := <-g.started:
		t.Fatalf("task %q started again while the first run was in progress", again)
	default:
	}
	close(g.release)
	if r := next(t, results); !r.Result.Success {
		t.Fatalf("result: %+v", r.Result)
	}
}
