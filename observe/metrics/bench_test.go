package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/benchsuite"
	"github.com/agentmesh/agentmesh/observe/metrics"
	"github.com/agentmesh/agentmesh/schemas"
)

// BenchmarkTaskRoundTripMetrics measures the task round trip (a no-op task
// through MESH_TASKS and its result back) to two agents on one server in
// the same run: one bare, one with the metrics observer. Each iteration
// does one round trip to each, alternating, so both see the same load; the
// p50s are reported as plain-p50-ns and metrics-p50-ns and their ratio as
// metrics/plain.
func BenchmarkTaskRoundTripMetrics(b *testing.B) {
	srv := bustest.Start(b)
	res := srv.Provision(b)
	nc := srv.Conn(b)
	env := benchsuite.Env{NC: nc, JS: srv.JetStream(b), Names: srv.Names(), Res: res}
	ctx := context.Background()
	obs, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	plain, err := benchsuite.ServeNoop(ctx, env, "BenchPlain")
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close()
	metered, err := benchsuite.ServeNoop(ctx, env, "BenchMetrics", agents.WithObserver(obs))
	if err != nil {
		b.Fatal(err)
	}
	defer metered.Close()
	var plainDurs, meteredDurs []time.Duration
	for b.Loop() {
		for _, agent := range []string{"BenchPlain", "BenchMetrics"} {
			d, err := benchsuite.RoundTrip(ctx, env, agent)
			if err != nil {
				b.Fatal(err)
			}
			if agent == "BenchPlain" {
				plainDurs = append(plainDurs, d)
			} else {
				meteredDurs = append(meteredDurs, d)
			}
		}
	}
	p, m := benchsuite.P50(plainDurs), benchsuite.P50(meteredDurs)
	b.ReportMetric(float64(p), "plain-p50-ns")
	b.ReportMetric(float64(m), "metrics-p50-ns")
	if p > 0 {
		b.ReportMetric(float64(m)/float64(p), "metrics/plain")
	}
}

// BenchmarkObserveTask measures what the observer adds to one task: its
// three observations (received, started, finished), each op one task;
// the nop sub-benchmark is the same three calls to schemas.NopObserver.
func BenchmarkObserveTask(b *testing.B) {
	obs, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ref := schemas.TaskRef{Agent: "TextAgent", TaskID: "t"}
	for _, c := range []struct {
		name string
		o    schemas.Observer
	}{{"nop", schemas.NopObserver{}}, {"metrics", obs}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.o.Observe(ctx, schemas.TaskReceived{TaskRef: ref, Delivery: 1})
				c.o.Observe(ctx, schemas.TaskStarted{TaskRef: ref, Delivery: 1})
				c.o.Observe(ctx, schemas.TaskFinished{TaskRef: ref, Outcome: schemas.OutcomeCompleted, Duration: time.Millisecond})
			}
		})
	}
}
