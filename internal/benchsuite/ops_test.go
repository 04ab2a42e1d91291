package benchsuite

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/agentmesh/agentmesh/bus/bustest"
)

// spy counts the messages the server routes, by subject shape, while on.
type spy struct {
	mu     sync.Mutex
	on     bool
	counts map[string]int
}

func startSpy(t *testing.T, srv *bustest.Server) *spy {
	s := &spy{counts: map[string]int{}}
	nc := srv.Conn(t)
	if _, err := nc.Subscribe(">", func(m *nats.Msg) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.on {
			s.counts[subjectShape(m.Subject)]++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return s
}

// measure runs f n times and returns the messages per run by subject shape.
func (s *spy) measure(t *testing.T, n int, f func() error) map[string]float64 {
	t.Helper()
	s.mu.Lock()
	s.on, s.counts = true, map[string]int{}
	s.mu.Unlock()
	for range n {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	// The last acks and deliveries: wait until nothing new has come for
	// a while (at most a few seconds).
	for last, deadline := -1, time.Now().Add(5*time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		s.mu.Lock()
		n := 0
		for _, c := range s.counts {
			n += c
		}
		s.mu.Unlock()
		if n == last {
			break
		}
		last = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.on = false
	per := map[string]float64{}
	for k, c := range s.counts {
		per[k] = float64(c) / float64(n)
	}
	return per
}

// subjectShape replaces the ids in a subject (inboxes, ack subjects'
// numbers, task and run ids, step keys): tokens with a digit or of 16
// characters and more.
func subjectShape(s string) string {
	if strings.HasPrefix(s, "_INBOX.") {
		return "_INBOX"
	}
	if i := strings.Index(s, ".step."); i > 0 {
		s = s[:i] + ".step.*"
	}
	toks := strings.Split(s, ".")
	for i, t := range toks {
		if len(t) >= 16 || strings.ContainsAny(t, "0123456789") {
			toks[i] = "*"
		}
	}
	return strings.Join(toks, ".")
}

// near reports whether a count per task is want, give or take one message
// in a hundred.
func near(got, want float64) bool { return got > want-0.01 && got < want+0.01 }

func total(per map[string]float64) (n float64) {
	for _, v := range per {
		n += v
	}
	return n
}

func logCounts(t *testing.T, name string, per map[string]float64) {
	for _, k := range slices.Sorted(maps.Keys(per)) {
		t.Logf("%s: %5.2f %s", name, per[k], k)
	}
}

// TestHopMessagesPerTask counts the NATS messages of one durable hop through
// TextAgent and of the hand-written JetStream hop: the mesh sends the same
// ones (task, its delivery, two publish acknowledgements, the result, the
// ack) and at most a pull request per few tasks more.
func TestHopMessagesPerTask(t *testing.T) {
	srv := bustest.Start(t)
	env := Env{NC: srv.Conn(t), JS: srv.JetStream(t), AgentNC: srv.Conn(t), Names: srv.Names(), Res: srv.Provision(t)}
	ctx := context.Background()
	_, closer, err := DurableHop(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	raw, err := startRawWorker(ctx, env, "opscount", 1, upperText)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	s := startSpy(t, srv)
	const n = 200
	base := s.measure(t, n, func() error { _, _, err := raw.hop(ctx, env, nuid.Next(), TextTaskData); return err })
	mesh := s.measure(t, n, func() error { _, _, err := RoundTripData(ctx, env, "TextAgent", TextTaskData); return err })
	logCounts(t, "baseline", base)
	logCounts(t, "mesh", mesh)
	if total(mesh) > total(base)+0.5 {
		t.Errorf("the mesh hop sends %.2f messages per task, the hand-written one %.2f", total(mesh), total(base))
	}
	if !near(mesh["mesh.task.TextAgent"], 2) || !near(mesh["mesh.result.TextAgent.*"], 1) || !near(mesh["$JS.ACK.MESH_TASKS.TextAgent.*.*.*.*.*"], 1) {
		t.Errorf("want per task one task (and its delivery), one result, one ack; got %v", mesh)
	}
}

// TestPipelineWritesPerStep counts the KV writes of a 100-step chain with
// outputs: per step the orchestrator writes the step's record, the run's
// state (the routed output) and the run's header, no more.
func TestPipelineWritesPerStep(t *testing.T) {
	srv := bustest.Start(t)
	env := Env{NC: srv.Conn(t), JS: srv.JetStream(t), AgentNC: srv.Conn(t), Names: srv.Names(), Res: srv.Provision(t)}
	ctx := context.Background()
	_, closer, err := Pipelines(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	s := startSpy(t, srv)
	sh := pipeShapes[0]
	per := s.measure(t, 3, func() error { _, err := runPipeline(ctx, env, sh); return err })
	for k := range per {
		per[k] /= float64(sh.depth)
	}
	logCounts(t, "per step", per)
	kv := 0.0
	for k, v := range per {
		if strings.HasPrefix(k, "$KV.") {
			kv += v
		}
	}
	if kv > 3.1 {
		t.Errorf("%.2f KV writes per step, want at most 3 (record, state, header)", kv)
	}
	if !near(per["mesh.task.BenchPipeEmit"], 2) {
		t.Errorf("%.2f task messages per step, want 2 (the task and its delivery)", per["mesh.task.BenchPipeEmit"])
	}
}
