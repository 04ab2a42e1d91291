package benchsuite

import (
	"context"
	"testing"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/benchsuite/sdkce"
)

func env(tb testing.TB) Env {
	srv := bustest.Start(tb)
	return Env{NC: srv.Conn(tb), JS: srv.JetStream(tb), Names: srv.Names(), Res: srv.Provision(tb)}
}

// BenchmarkSuite runs every pair as two sub-benchmarks, baseline first:
//
//	go test -run '^$' -bench Suite ./internal/benchsuite/
func BenchmarkSuite(b *testing.B) {
	pairs, closer, err := Pairs(context.Background(), env(b))
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
