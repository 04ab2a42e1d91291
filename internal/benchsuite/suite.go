package benchsuite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
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
}

// Pair is one comparison: the mesh's body and the baseline's body.
type Pair struct {
	Name      string
	Unit      string // what one iteration is, e.g. "round trip"
	Mesh      func(b *testing.B)
	Baseline  func(b *testing.B)
	Baseliner string // what the baseline is, e.g. "nats.go core request-reply"
}

// Comparison is a measured pair.
type Comparison struct {
	Name      string  `json:"name"`
	Baseline  string  `json:"baseline"`
	MeshNs    float64 `json:"mesh_ns_per_op"`
	BaseNs    float64 `json:"baseline_ns_per_op"`
	MeshP50   float64 `json:"mesh_p50_ns,omitempty"`
	BaseP50   float64 `json:"baseline_p50_ns,omitempty"`
	MeshMBs   float64 `json:"mesh_mb_per_s,omitempty"`
	BaseMBs   float64 `json:"baseline_mb_per_s,omitempty"`
	Ratio     float64 `json:"ratio"` // mesh time over baseline time; lower is better
	MeshAlloc int64   `json:"mesh_allocs_per_op"`
	BaseAlloc int64   `json:"baseline_allocs_per_op"`
}

// Pairs returns the suite against env. Call Close on the returned closer
// when done.
func Pairs(ctx context.Context, env Env) ([]Pair, io.Closer, error) {
	task, closer, err := TaskRoundTrip(ctx, env)
	if err != nil {
		return nil, nil, err
	}
	direct, directCloser, err := DirectCall(ctx, env)
	if err != nil {
		return nil, nil, errors.Join(err, closer.Close())
	}
	pairs := []Pair{Codec(), task, direct}
	pairs = append(pairs, ObjectStore(ctx, env, 1<<20)...)
	return pairs, closerFunc(func() error { return errors.Join(directCloser.Close(), closer.Close()) }), nil
}

// Measure runs both sides of p with testing.Benchmark, baseline first.
func Measure(p Pair) Comparison {
	base := testing.Benchmark(p.Baseline)
	mesh := testing.Benchmark(p.Mesh)
	c := Comparison{
		Name: p.Name, Baseline: p.Baseliner,
		MeshNs: float64(mesh.NsPerOp()), BaseNs: float64(base.NsPerOp()),
		MeshP50: mesh.Extra["p50-ns"], BaseP50: base.Extra["p50-ns"],
		MeshAlloc: mesh.AllocsPerOp(), BaseAlloc: base.AllocsPerOp(),
	}
	if mesh.Bytes > 0 && mesh.T > 0 {
		c.MeshMBs = float64(mesh.Bytes) * float64(mesh.N) / 1e6 / mesh.T.Seconds()
		c.BaseMBs = float64(base.Bytes) * float64(base.N) / 1e6 / base.T.Seconds()
	}
	switch {
	case c.MeshP50 > 0 && c.BaseP50 > 0:
		c.Ratio = c.MeshP50 / c.BaseP50
	case c.BaseNs > 0:
		c.Ratio = c.MeshNs / c.BaseNs
	}
	return c
}

// Print writes comparisons as a table.
func Print(w io.Writer, cs []Comparison) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BENCHMARK\tAGENTMESH\tBASELINE\tRATIO\tBASELINE IS")
	for _, c := range cs {
		mesh, base := fmtNs(c.MeshNs), fmtNs(c.BaseNs)
		if c.MeshP50 > 0 {
			mesh, base = "p50 "+fmtNs(c.MeshP50), "p50 "+fmtNs(c.BaseP50)
		}
		if c.MeshMBs > 0 {
			mesh, base = fmt.Sprintf("%.0f MB/s", c.MeshMBs), fmt.Sprintf("%.0f MB/s", c.BaseMBs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2fx\t%s\n", c.Name, mesh, base, c.Ratio, c.Baseline)
	}
	_ = tw.Flush()
}

func fmtNs(ns float64) string {
	return time.Duration(ns).Round(100 * time.Nanosecond).String()
}

// recordP50 reports the median of durs as the p50-ns metric.
func recordP50(b *testing.B, durs []time.Duration) {
	if len(durs) == 0 {
		return
	}
	b.ReportMetric(float64(P50(durs)), "p50-ns")
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
