package benchsuite

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/benchsuite/sdkce"
)

// The test binary plays a role of the run-state scenarios (see RunRole)
// when run again with these variables set.
const (
	roleEnv   = "AGENTMESH_BENCHSUITE_ROLE"
	urlEnv    = "AGENTMESH_BENCHSUITE_NATS"
	prefixEnv = "AGENTMESH_BENCHSUITE_PREFIX"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(playRole(role))
	}
	os.Exit(m.Run())
}

// playRole runs RunRole until SIGINT or SIGTERM.
func playRole(name string) int {
	role, err := ParseRole(name)
	if err == nil {
		var nc *nats.Conn
		if nc, err = nats.Connect(os.Getenv(urlEnv)); err == nil {
			defer nc.Close()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err = RunRole(ctx, nc, bus.MustNames(os.Getenv(prefixEnv)), role, func() { fmt.Println(ReadyLine(role)) })
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func env(tb testing.TB) Env {
	srv := bustest.Start(tb)
	url := srv.Conn(tb).ConnectedUrl()
	launch := func(role Role, names bus.Names) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), roleEnv+"="+string(role), urlEnv+"="+url, prefixEnv+"="+names.Prefix())
		return cmd
	}
	return Env{NC: srv.Conn(tb), JS: srv.JetStream(tb), Names: srv.Names(), Res: srv.Provision(tb), Launch: launch}
}

// suiteIDs are the scenarios BenchmarkSuite sets up: all but the big
// ones, and those big ones that the second level of -test.bench matches
// (e.g. -bench 'Suite/wave-1000'; -bench . names none), so that CI's run
// of every benchmark stays short.
func suiteIDs() []string {
	var named *regexp.Regexp
	if f := flag.Lookup("test.bench"); f != nil {
		if parts := strings.Split(f.Value.String(), "/"); len(parts) > 1 {
			named, _ = regexp.Compile(parts[1]) // go test already rejected a bad pattern
		}
	}
	var ids []string
	for _, id := range IDs() {
		if !slices.Contains(Big(), id) || (named != nil && named.MatchString(id)) {
			ids = append(ids, id)
		}
	}
	return ids
}

// BenchmarkSuite runs every pair as two sub-benchmarks, baseline first:
//
//	go test -run '^$' -bench Suite ./internal/benchsuite/
//
// The run-state scenarios' big sizes (Big) run only when -bench names
// them: go test -run '^$' -bench 'Suite/(wave|chain)-1000' ./internal/benchsuite/
func BenchmarkSuite(b *testing.B) {
	pairs, closer, err := Pairs(context.Background(), env(b), suiteIDs()...)
	if err != nil {
		b.Fatal(err)
	}
	defer closer.Close()
	// The codec's baseline is sdk-go, which only tests link.
	pairs = append([]Pair{Codec(sdkce.StructuredRoundTrip)}, pairs...)
	for _, p := range pairs {
		b.Run(p.ID+"/baseline", p.Baseline)
		b.Run(p.ID+"/agentmesh", p.Mesh)
	}
}

// TestMeasureComparesBothSides runs the codec pair once through Measure and
// checks that both sides produced figures and a ratio.
func TestMeasureComparesBothSides(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for about two seconds")
	}
	c := MeasureRounds(Codec(sdkce.StructuredRoundTrip), 1)
	if c.Mesh.NsPerOp <= 0 || c.Base.NsPerOp <= 0 || c.Ratio <= 0 || c.ThroughputRatio <= 0 {
		t.Fatalf("incomplete comparison: %+v", c)
	}
}

// TestBigShapesRunOnlyWhenNamed: the run-state scenarios' sizes above 100
// (and chat-200) are left out of a run that names no scenario, so CI's
// run of every benchmark stays short, and are there when named.
func TestBigShapesRunOnlyWhenNamed(t *testing.T) {
	big := Big()
	for _, id := range []string{"wave-300", "wave-1000", "chain-1000", "foreach-1000", "chat-200"} {
		if !slices.Contains(big, id) || !slices.Contains(IDs(), id) {
			t.Errorf("%s: want it a scenario run only when named; IDs %v, big %v", id, IDs(), big)
		}
	}
	for _, id := range []string{"wave-10", "wave-100", "chain-100", "foreach-100", "chat-50", "durable-hop"} {
		if slices.Contains(big, id) || !slices.Contains(IDs(), id) {
			t.Errorf("%s: want it a scenario run by default; IDs %v, big %v", id, IDs(), big)
		}
	}
	if testing.Short() {
		t.Skip("starts the orchestrator and agents processes")
	}
	pairs, closer, err := Pairs(context.Background(), env(t), "wave-1000")
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if len(pairs) != 1 || pairs[0].ID != "wave-1000" {
		t.Fatalf("--only wave-1000 gave %d pairs: %+v", len(pairs), pairs)
	}
}

// TestMeasureReportsFailure: a body that fails ends the pair's measuring
// with its error in the comparison (b.Fatal inside testing.Benchmark
// panics outside go test), keeping the rounds that completed.
func TestMeasureReportsFailure(t *testing.T) {
	calls := 0
	p := Pair{ID: "flaky", Unit: "op",
		Baseline: func(b *testing.B) {
			for b.Loop() {
			}
		},
		Mesh: func(b *testing.B) {
			calls++
			if calls > 1 {
				fail(b, errors.New("the server refused the task"))
			}
			for b.Loop() {
			}
		}}
	c := MeasureRounds(p, 3)
	if c.Error != "flaky, agentmesh: the server refused the task" || c.Rounds != 1 || c.Mesh.PerSec <= 0 || c.Base.PerSec <= 0 {
		t.Fatalf("comparison %+v; want the error, and the one round that completed", c)
	}
	var out strings.Builder
	Print(&out, []Comparison{c})
	if !strings.Contains(out.String(), "FAILED flaky, agentmesh: the server refused the task") {
		t.Fatalf("Print does not show the failure:\n%s", out.String())
	}
}

// TestShapeCountsKVWrites measures chain-10 once and checks the KV
// figures against what the hand-driven side is known to write: per run,
// the run's key created ({"done":0}) and updated once per result
// ({"done":1} ... {"done":10}), so 11 writes (stored and published) and
// 111 bytes for 10 steps. The mesh side's are counted the same way.
func TestShapeCountsKVWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the orchestrator and agents processes and measures for about two seconds")
	}
	pairs, closer, err := Pairs(context.Background(), env(t), "chain-10")
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	c := MeasureRounds(pairs[0], 1)
	if c.Error != "" {
		t.Fatal(c.Error)
	}
	near := func(got, want float64) bool { return got > want-1e-6 && got < want+1e-6 }
	m := c.Base.Metrics
	if w, p, b := m["kv-writes/step"], m["kv-publishes/step"], m["kv-B/step"]; !near(w, 1.1) || !near(p, 1.1) || !near(b, 11.1) {
		t.Errorf("hand-driven chain of 10: %v KV writes stored, %v published, %v bytes per step; want 1.1, 1.1 and 11.1", w, p, b)
	}
	m = c.Mesh.Metrics
	if w, p, b := m["kv-writes/step"], m["kv-publishes/step"], m["kv-B/step"]; w < 1 || p < w || b <= 0 {
		t.Errorf("mesh chain of 10: %v KV writes stored, %v published, %v bytes per step; want at least a write per step, each published", w, p, b)
	}
	if r := c.Ratios["ns/step"]; r <= 0 || c.Mesh.Metrics["ns/step@last-tenth"] <= 0 {
		t.Errorf("no ratio per step or no time of the last tenth: %+v", c)
	}
}

// TestTaskScenariosRunAsProcesses: where the runner can start processes,
// the task and pipeline scenarios' agents, orchestrator and baselines run
// in processes of their own; the benchmark's process holds no agent or
// responder (no subscription of its connection) and only sends. The
// scenarios ran both sides inside the benchmark's process before.
func TestTaskScenariosRunAsProcesses(t *testing.T) {
	e := env(t)
	var launched []Role
	launch := e.Launch
	e.Launch = func(role Role, names bus.Names) *exec.Cmd {
		launched = append(launched, role)
		return launch(role, names)
	}
	before := e.NC.NumSubscriptions()
	pairs, closer, err := Pairs(context.Background(), e, "direct-call", "durable-hop", "pipeline-chain100-outputs")
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	want := []Role{RoleHopAgents, RoleHopBaseline, RolePipelineAgents, RolePipelineOrchestrator}
	if !slices.Equal(launched, want) {
		t.Errorf("processes started: %v, want %v", launched, want)
	}
	// The pipeline baseline's results consumer reads through this
	// connection (one subscription): it is the hand-driven orchestrator,
	// the mesh side's client's counterpart.
	if got := e.NC.NumSubscriptions() - before; got > 1 {
		t.Errorf("the benchmark's connection gained %d subscriptions: an agent or responder runs in the benchmark's process", got)
	}
	for _, p := range pairs {
		c := MeasureRounds(p, 1)
		if c.Error != "" || c.Ratio <= 0 {
			t.Errorf("%s: %+v", p.ID, c)
		}
	}
}
