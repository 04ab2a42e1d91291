package export_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/benchsuite"
	"github.com/agentmesh/agentmesh/telemetry"
	"github.com/agentmesh/agentmesh/telemetry/export"
	"github.com/agentmesh/agentmesh/telemetry/telemetrytest"
)

// BenchmarkTaskRoundTripTracing measures one no-op task round trip (a
// dispatcher span, the task through MESH_TASKS with its traceparent, the
// agent runtime's task and queue-wait spans, the result back) with tracing
// off (the no-op provider), recorded (the SDK sampling every span, no
// exporter) and exported (the SDK exporting by OTLP/HTTP to a receiver on
// the loopback, which decodes every request in this same process), in the
// same run. The traced variants report their p50 over tracing-off's as
// x-off: the overhead of tracing.
func BenchmarkTaskRoundTripTracing(b *testing.B) {
	srv := bustest.Start(b)
	res := srv.Provision(b)
	nc := srv.Conn(b)
	env := benchsuite.Env{NC: nc, JS: srv.JetStream(b), Names: srv.Names(), Res: res}
	_, closer, err := benchsuite.TaskRoundTrip(context.Background(), env)
	if err != nil {
		b.Fatal(err)
	}
	defer closer.Close()
	keepProvider(b)
	subj, _ := env.Names.Task(benchsuite.NoopAgentName)
	roundTrips := func(b *testing.B) time.Duration {
		durs := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			ctx, span := telemetry.Start(context.Background(), "bench dispatch")
			ev, err := bus.NewEvent(bus.TypeTaskRequested, "/bench", []byte(`{}`))
			if err != nil {
				b.Fatal(err)
			}
			client.SetTraceParent(ctx, &ev)
			sub, err := nc.SubscribeSync(env.Names.Result(benchsuite.NoopAgentName, ev.ID))
			if err != nil {
				b.Fatal(err)
			}
			msg, err := bus.Encode(subj, ev)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := env.JS.PublishMsg(ctx, msg); err != nil {
				b.Fatal(err)
			}
			if _, err := sub.NextMsg(10 * time.Second); err != nil {
				b.Fatal(err)
			}
			_ = sub.Unsubscribe()
			span.End()
			durs = append(durs, time.Since(start))
		}
		p50 := benchsuite.P50(durs)
		b.ReportMetric(float64(p50), "p50-ns")
		return p50
	}

	var off time.Duration
	b.Run("tracing-off", func(b *testing.B) {
		otel.SetTracerProvider(noop.NewTracerProvider())
		off = roundTrips(b)
	})
	ratio := func(b *testing.B, on time.Duration) {
		if off > 0 {
			b.ReportMetric(float64(on)/float64(off), "x-off")
		}
	}
	b.Run("tracing-recorded", func(b *testing.B) {
		tp := export.NewTracerProvider()
		defer func() { _ = tp.Shutdown(context.Background()) }()
		otel.SetTracerProvider(tp)
		ratio(b, roundTrips(b))
	})
	b.Run("tracing-exported", func(b *testing.B) {
		sink := telemetrytest.NewSink(b)
		b.Setenv(export.EnvEndpoint, sink.URL())
		shutdown, err := export.Setup(context.Background(), "agentmesh-bench")
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = shutdown(context.Background()) }()
		ratio(b, roundTrips(b))
	})
}
