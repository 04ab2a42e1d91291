package telemetry_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
	"github.com/agentmesh/agentmesh/telemetry/export"
)

// recorder installs an SDK provider with the agentmesh ID generator,
// recording into memory, for the test.
func recorder(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := export.NewTracerProvider(sdktrace.WithSyncer(exp))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev); _ = tp.Shutdown(context.Background()) })
	return exp
}

// The spans of a run and its steps get the derived ids every replica
// computes alike: a step's task, sent before the step's span exists, names
// it as parent, and the run's span hangs under the submission's.
func TestObserverRecordsRunAndStepSpans(t *testing.T) {
	exp := recorder(t)
	const submitted = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := telemetry.WithTraceParent(context.Background(), submitted)
	var ob telemetry.Observer
	ob.Observe(ctx, schemas.StepChanged{RunID: "r1", StepID: "s1", Agent: "A", Status: schemas.StepRunning})
	ob.Observe(ctx, schemas.StepChanged{RunID: "r1", StepID: "s1", Agent: "A", Status: schemas.StepCompleted, Duration: 40 * time.Millisecond})
	ob.Observe(ctx, schemas.StepChanged{RunID: "r1", StepID: "s2", Agent: "B", Status: schemas.StepFailed, Error: "boom", Duration: time.Millisecond})
	ob.Observe(ctx, schemas.RunChanged{RunID: "r1", Name: "p", Status: schemas.RunRunning})
	ob.Observe(ctx, schemas.RunChanged{RunID: "r1", Name: "p", Status: schemas.RunFailed, Duration: 50 * time.Millisecond})

	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3 (running transitions record none)", len(spans))
	}
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	run, s1, s2 := byName["pipeline run p"], byName["pipeline step s1"], byName["pipeline step s2"]
	wantTrace := telemetry.SpanContextOf(submitted).TraceID()
	if run.SpanContext.TraceID() != wantTrace || run.Parent.SpanID() != telemetry.SpanContextOf(submitted).SpanID() {
		t.Errorf("run span in trace %s under %s, want trace %s under the submission's span", run.SpanContext.TraceID(), run.Parent.SpanID(), wantTrace)
	}
	if run.SpanContext.SpanID() != telemetry.RunSpanID("r1") {
		t.Errorf("run span id %s, want the derived %s", run.SpanContext.SpanID(), telemetry.RunSpanID("r1"))
	}
	task := telemetry.SpanContextOf(telemetry.StepTraceParent(submitted, "r1", "s1"))
	if s1.SpanContext.SpanID() != task.SpanID() || s1.SpanContext.TraceID() != task.TraceID() {
		t.Errorf("step span %s/%s, but its task names %s/%s as parent", s1.SpanContext.TraceID(), s1.SpanContext.SpanID(), task.TraceID(), task.SpanID())
	}
	if s1.Parent.SpanID() != telemetry.RunSpanID("r1") || s2.Parent.SpanID() != telemetry.RunSpanID("r1") {
		t.Error("step spans are not children of the run's span")
	}
	if d := s1.EndTime.Sub(s1.StartTime); d != 40*time.Millisecond {
		t.Errorf("step span lasts %s, want the step's 40ms", d)
	}
	if s2.Status.Code.String() != "Error" || s2.Status.Description != "boom" || run.Status.Code.String() != "Error" {
		t.Errorf("failed step/run status: %+v / %+v", s2.Status, run.Status)
	}
}

// A run submitted without a traceparent is a root span in the trace its id
// derives, which its steps' tasks name too.
func TestObserverRootRun(t *testing.T) {
	exp := recorder(t)
	var ob telemetry.Observer
	ob.Observe(context.Background(), schemas.RunChanged{RunID: "r2", Name: "p", Status: schemas.RunCompleted, Duration: time.Millisecond})
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	if s.Parent.IsValid() || s.SpanContext.TraceID() != telemetry.RunTraceID("r2") || s.SpanContext.SpanID() != telemetry.RunSpanID("r2") {
		t.Errorf("root run span %s/%s parent %v", s.SpanContext.TraceID(), s.SpanContext.SpanID(), s.Parent)
	}
	task := telemetry.SpanContextOf(telemetry.StepTraceParent("", "r2", "s"))
	if task.TraceID() != telemetry.RunTraceID("r2") || !task.IsSampled() {
		t.Errorf("step task of a root run: %v", task)
	}
	// Other spans keep random ids: the derived ones do not leak to children.
	ctx, a := telemetry.Start(context.Background(), "a")
	_, b := telemetry.Start(ctx, "b")
	b.End()
	a.End()
	if trace.SpanContextFromContext(ctx).SpanID() == b.SpanContext().SpanID() {
		t.Error("a child got its parent's span id")
	}
}
