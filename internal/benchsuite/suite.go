package benchsuite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
)

// Env is what the benchmarks run against: a connection to a provisioned mesh.
type Env struct {
	NC    *nats.Conn
	JS    jetstream.JetStream
	Names bus.Names
	Res   *bus.Resources

	// On a secure mesh the agent and its caller are different identities:
	// AgentNC is the agent's connection (default NC), and Client the
	// caller's client name, whose own result subject the task names.
	AgentNC *nats.Conn
	Client  string

	// Launch makes the command of a process that plays role against the
	// same server with names (see RunRole); the run-state scenarios need
	// it, as they run the orchestrator and the agents as separate
	// processes. The agentmesh binary runs its hidden bench-role
	// subcommand; the suite's test binary runs itself again.
	Launch func(role Role, names bus.Names) *exec.Cmd
}

// Pair is one comparison: the mesh's body and the baseline's body.
type Pair struct {
	ID        string // the scenario's name for --only and go test -bench, e.g. "durable-hop"
	Name      string
	Unit      string // what one iteration is, e.g. "round trip"
	Mesh      func(b *testing.B)
	Baseline  func(b *testing.B)
	Baseliner string // what the baseline is, e.g. "nats.go core request-reply"
}

// Side is one side of a comparison, each figure the median of its rounds.
type Side struct {
	NsPerOp float64 `json:"ns_per_op"`
	P50     float64 `json:"p50_ns,omitempty"`
	P99     float64 `json:"p99_ns,omitempty"`
	PerSec  float64 `json:"per_s"` // units (Pair.Unit) per second
	MBs     float64 `json:"mb_per_s,omitempty"`
	Allocs  int64   `json:"allocs_per_op"`
	// Metrics are the body's other figures (per step, per turn, KV
	// writes and bytes), each the median of the rounds, by unit, e.g.
	// "ns/step", "kv-writes/step", "ns/turn@41-50".
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// Comparison is a measured pair.
type Comparison struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	Unit     string  `json:"unit"`
	Baseline string  `json:"baseline"`
	Rounds   int     `json:"rounds"`
	Mesh     Side    `json:"agentmesh"`
	Base     Side    `json:"baseline_figures"`
	Ratio    float64 `json:"ratio"` // mesh p50 (else time per op) over the baseline's; lower is better
	// ThroughputRatio is the mesh's units per second over the baseline's;
	// higher is better.
	ThroughputRatio float64 `json:"throughput_ratio"`
	// Ratios are the mesh's time metrics (those in ns/...) over the
	// baseline's from the same run, by metric: "ns/step" is the run-state
	// scenarios' mesh/hand ratio per step.
	Ratios map[string]float64 `json:"ratios,omitempty"`
	// Error says why the pair could not be measured; its figures are then
	// those of the rounds before the failure, if any.
	Error string `json:"error,omitempty"`
}

// scenario makes the pairs of one or more scenarios.
type scenario struct {
	ids  []string
	big  []string // ids run only when named
	make func(context.Context, Env) ([]Pair, io.Closer, error)
}

// one adapts a maker of one pair.
func one(id string, mk func(context.Context, Env) (Pair, io.Closer, error)) scenario {
	return scenario{ids: []string{id}, make: func(ctx context.Context, env Env) ([]Pair, io.Closer, error) {
		p, c, err := mk(ctx, env)
		return []Pair{p}, c, err
	}}
}

var scenarios = []scenario{
	hopScenario(),
	{ids: []string{"pipeline-chain100-outputs", "pipeline-wide10x100"}, make: Pipelines},
	{ids: []string{"objectstore-put-1MiB", "objectstore-get-1MiB"}, make: func(ctx context.Context, env Env) ([]Pair, io.Closer, error) {
		return ObjectStore(ctx, env, 1<<20), closerFunc(func() error { return nil }), nil
	}},
	shapeScenario(),
	{ids: []string{"task-no-steps", "step-recorded"}, make: StepJournal},
}

func shapeScenario() scenario {
	all, big := shapeIDs()
	return scenario{ids: all, big: big, make: Shapes}
}

// IDs lists the suite's scenario names, in the order Pairs returns them.
func IDs() []string {
	var ids []string
	for _, s := range scenarios {
		ids = append(ids, s.ids...)
	}
	return ids
}

// Big lists the scenarios that run only when named (the run-state
// scenarios' larger sizes): Pairs without names leaves them out.
func Big() []string {
	var ids []string
	for _, s := range scenarios {
		ids = append(ids, s.big...)
	}
	return ids
}

// Pairs returns the suite against env: the scenarios named by only (their
// IDs, exactly), or when only is empty all but Big's; only those are set
// up. A name that is no scenario is an error naming the scenarios. Call
// Close on the returned closer when done.
func Pairs(ctx context.Context, env Env, only ...string) ([]Pair, io.Closer, error) {
	all := IDs()
	for _, name := range only {
		if name == "codec" {
			return nil, nil, fmt.Errorf("the codec scenario compares with the CloudEvents sdk-go, which the agentmesh binary does not link: run go test -run '^$' -bench 'Suite/codec' ./internal/benchsuite/")
		}
		if !slices.Contains(all, name) {
			return nil, nil, fmt.Errorf("benchmark scenario %q does not exist: use one of %s", name, strings.Join(all, ", "))
		}
	}
	var (
		pairs   []Pair
		closers []io.Closer
	)
	closeAll := closerFunc(func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i].Close())
		}
		return errors.Join(errs...)
	})
	want := func(s scenario, id string) bool {
		if len(only) == 0 {
			return !slices.Contains(s.big, id)
		}
		return slices.Contains(only, id)
	}
	for _, s := range scenarios {
		if !slices.ContainsFunc(s.ids, func(id string) bool { return want(s, id) }) {
			continue
		}
		ps, c, err := s.make(ctx, env)
		if err != nil {
			return nil, nil, errors.Join(err, closeAll.Close())
		}
		closers = append(closers, c)
		for _, p := range ps {
			if want(s, p.ID) {
				pairs = append(pairs, p)
			}
		}
	}
	return pairs, closeAll, nil
}

// Rounds is how many times Measure runs each side, alternating baseline
// and mesh, so that a slow spell of a shared machine hits both.
const Rounds = 3

// Measure runs both sides of p with testing.Benchmark, Rounds times each,
// alternating, baseline first; each figure is the median of the rounds.
func Measure(p Pair) Comparison { return MeasureRounds(p, Rounds) }

// MeasureRounds is Measure with rounds rounds (at least 1). A side that
// fails (see fail) ends the measuring of p: the comparison's Error says
// why, and its figures are those of the rounds that completed.
func MeasureRounds(p Pair, rounds int) Comparison {
	rounds = max(rounds, 1)
	var (
		base, mesh []testing.BenchmarkResult
		failed     error
	)
	for range rounds {
		r, err := benchmark(p.Baseline)
		if err != nil {
			failed = fmt.Errorf("%s, baseline: %w", p.ID, err)
			break
		}
		base = append(base, r)
		if r, err = benchmark(p.Mesh); err != nil {
			failed = fmt.Errorf("%s, agentmesh: %w", p.ID, err)
			break
		}
		mesh = append(mesh, r)
	}
	c := Comparison{ID: p.ID, Name: p.Name, Unit: p.Unit, Baseline: p.Baseliner, Rounds: len(mesh)}
	if failed != nil {
		c.Error = failed.Error()
	}
	if len(mesh) == 0 {
		return c
	}
	c.Mesh, c.Base = summarize(mesh), summarize(base[:len(mesh)])
	switch {
	case c.Mesh.P50 > 0 && c.Base.P50 > 0:
		c.Ratio = c.Mesh.P50 / c.Base.P50
	case c.Base.NsPerOp > 0:
		c.Ratio = c.Mesh.NsPerOp / c.Base.NsPerOp
	}
	if c.Base.PerSec > 0 {
		c.ThroughputRatio = c.Mesh.PerSec / c.Base.PerSec
	}
	for k, v := range c.Mesh.Metrics {
		if b := c.Base.Metrics[k]; strings.HasPrefix(k, "ns/") && b > 0 {
			if c.Ratios == nil {
				c.Ratios = map[string]float64{}
			}
			c.Ratios[k] = v / b
		}
	}
	return c
}

// failures holds the error of each body run by benchmark that failed.
var failures sync.Map // *testing.B -> error

// benchmark runs body with testing.Benchmark and returns the error the
// body failed with (see fail).
func benchmark(body func(b *testing.B)) (testing.BenchmarkResult, error) {
	var got *testing.B
	r := testing.Benchmark(func(b *testing.B) {
		if got == nil {
			got = b
			failures.Store(b, nil)
		}
		body(b)
	})
	if got == nil {
		return r, errors.New("the benchmark did not run")
	}
	v, _ := failures.LoadAndDelete(got)
	if err, _ := v.(error); err != nil {
		return r, err
	}
	if r.N == 0 {
		return r, errors.New("the benchmark failed")
	}
	return r, nil
}

// fail ends a benchmark body with err. Under Measure, whose
// testing.Benchmark has no test to log to (b.Fatal panics there, losing
// the whole run's output), the error is kept for Measure to report and
// the body stops with b.FailNow; under go test it is b.Fatal.
func fail(b *testing.B, err error) {
	if _, ok := failures.Load(b); ok {
		failures.Store(b, err)
		b.FailNow()
	}
	b.Fatal(err)
}

// summarize is the median of each figure over rs.
func summarize(rs []testing.BenchmarkResult) Side {
	med := func(f func(r testing.BenchmarkResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	s := Side{
		NsPerOp: med(func(r testing.BenchmarkResult) float64 { return float64(r.NsPerOp()) }),
		P50:     med(func(r testing.BenchmarkResult) float64 { return r.Extra["p50-ns"] }),
		P99:     med(func(r testing.BenchmarkResult) float64 { return r.Extra["p99-ns"] }),
		Allocs:  int64(med(func(r testing.BenchmarkResult) float64 { return float64(r.AllocsPerOp()) })),
		PerSec: med(func(r testing.BenchmarkResult) float64 {
			if v := r.Extra[PerSecMetric]; v > 0 {
				return v
			}
			if r.T <= 0 {
				return 0
			}
			return float64(r.N) / r.T.Seconds()
		}),
	}
	for k := range rs[0].Extra {
		if k == "p50-ns" || k == "p99-ns" || k == PerSecMetric {
			continue
		}
		if s.Metrics == nil {
			s.Metrics = map[string]float64{}
		}
		s.Metrics[k] = med(func(r testing.BenchmarkResult) float64 { return r.Extra[k] })
	}
	s.MBs = med(func(r testing.BenchmarkResult) float64 {
		if r.Bytes <= 0 || r.T <= 0 {
			return 0
		}
		return float64(r.Bytes) * float64(r.N) / 1e6 / r.T.Seconds()
	})
	return s
}

// PerSecMetric is the metric a throughput body reports its units per
// second as (a sequential body's rate is N over its time).
const PerSecMetric = "units/s"

// Print writes comparisons as a table, then the figures per step and per
// turn of those that have them, then the errors of those that failed.
func Print(w io.Writer, cs []Comparison) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tAGENTMESH\tBASELINE\tRATIO\tTHROUGHPUT RATIO\tBASELINE IS")
	for _, c := range cs {
		if c.Rounds == 0 {
			fmt.Fprintf(tw, "%s\tfailed\t\t\t\t%s\n", c.ID, c.Baseline)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2fx\t%.2fx\t%s\n", c.ID, c.Mesh.format(c.Unit), c.Base.format(c.Unit), c.Ratio, c.ThroughputRatio, c.Baseline)
	}
	_ = tw.Flush()
	first := true
	for _, c := range cs {
		for _, k := range slices.Sorted(maps.Keys(c.Mesh.Metrics)) {
			if first {
				fmt.Fprintln(w)
				fmt.Fprintln(tw, "SCENARIO\tPER\tAGENTMESH\tBASELINE\tRATIO")
				first = false
			}
			m, b := c.Mesh.Metrics[k], c.Base.Metrics[k]
			cell := func(v float64) string {
				if strings.HasPrefix(k, "ns/") {
					return fmtNs(v)
				}
				return fmt.Sprintf("%.1f", v)
			}
			ratio := ""
			if r, ok := c.Ratios[k]; ok {
				ratio = fmt.Sprintf("%.2fx", r)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.ID, k, cell(m), cell(b), ratio)
		}
	}
	_ = tw.Flush()
	for _, c := range cs {
		if c.Error != "" {
			fmt.Fprintf(w, "\nFAILED %s\n", c.Error)
		}
	}
}

// format is the side's figures in one cell.
func (s Side) format(unit string) string {
	rate := fmt.Sprintf("%.0f %s/s", s.PerSec, unit)
	switch {
	case s.MBs > 0:
		return fmt.Sprintf("%.0f MB/s", s.MBs)
	case s.P50 > 0:
		return fmt.Sprintf("p50 %s p99 %s, %s", fmtNs(s.P50), fmtNs(s.P99), rate)
	case unit == "" || s.NsPerOp < 1000:
		return fmtNs(s.NsPerOp) + "/op"
	}
	return fmtNs(s.NsPerOp) + "/op, " + rate
}

func fmtNs(ns float64) string {
	return time.Duration(ns).Round(100 * time.Nanosecond).String()
}

// recordLatency reports the p50-ns and p99-ns of durs.
// measure runs op once per iteration of b.Loop, failing b on its error,
// and reports the p50 and p99 of the durations it returned.
func measure(b *testing.B, op func() (time.Duration, error)) {
	durs := make([]time.Duration, 0, b.N)
	for b.Loop() {
		d, err := op()
		if err != nil {
			fail(b, err)
		}
		durs = append(durs, d)
	}
	recordLatency(b, durs)
}

// timed returns how long f took, and its error.
func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

func recordLatency(b *testing.B, durs []time.Duration) {
	if len(durs) == 0 {
		return
	}
	s := slices.Clone(durs)
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2]), "p50-ns")
	b.ReportMetric(float64(s[min(len(s)-1, len(s)*99/100)]), "p99-ns")
}

// P50 is the median of durs (0 for none).
func P50(durs []time.Duration) time.Duration {
	if len(durs) == 0 {
		return 0
	}
	s := slices.Clone(durs)
	slices.Sort(s)
	return s[len(s)/2]
}
