package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmesh/agentmesh/schemas"
)

// Observer records the span of a pipeline run (schemas.RunChanged) and of
// each of its steps (schemas.StepChanged) when it ends, back-dated by its
// duration. The context of an observation carries the run's submission
// traceparent (WithTraceParent); without one the run's span is a root in
// the trace RunTraceID derives. Step spans are children of the run's span,
// and each step's task names its step span as parent (StepTraceParent), so
// the agents' spans hang under it.
type Observer struct{}

// Observe records the spans of runs and steps that ended.
func (Observer) Observe(ctx context.Context, o schemas.Observation) {
	switch o := o.(type) {
	case schemas.StepChanged:
		if o.Status == schemas.StepRunning || o.Status == schemas.StepPending || o.Status == schemas.StepWaiting {
			return
		}
		run := runSpanContext(trace.SpanContextFromContext(ctx), o.RunID)
		attrs := []attribute.KeyValue{AttrRunID.String(o.RunID), AttrStepID.String(o.StepID), AttrAgent.String(o.Agent),
			AttrStatus.String(o.Status), attribute.Int("agentmesh.wave", o.Wave)}
		record(withIDs(trace.ContextWithRemoteSpanContext(ctx, run), trace.TraceID{}, StepSpanID(o.RunID, o.StepID)),
			"pipeline step "+o.StepID, o.Duration, o.Status == schemas.StepFailed, o.Error, attrs)
	case schemas.RunChanged:
		if o.Status == schemas.RunRunning {
			return
		}
		parent, ok := runParent(trace.SpanContextFromContext(ctx), o.RunID)
		if ok {
			ctx = withIDs(trace.ContextWithRemoteSpanContext(ctx, parent), trace.TraceID{}, RunSpanID(o.RunID))
		} else {
			ctx = withIDs(trace.ContextWithSpanContext(ctx, trace.SpanContext{}), parent.TraceID(), RunSpanID(o.RunID))
		}
		attrs := []attribute.KeyValue{AttrRunID.String(o.RunID), AttrStatus.String(o.Status),
			attribute.String("agentmesh.pipeline.name", o.Name), attribute.Int("agentmesh.pipeline.steps", o.Steps)}
		record(ctx, "pipeline run "+o.Name, o.Duration, o.Status != schemas.RunCompleted, o.Error, attrs)
	}
}

// record starts and ends at once a span that lasted d until now.
func record(ctx context.Context, name string, d time.Duration, failed bool, msg string, attrs []attribute.KeyValue) {
	end := time.Now()
	_, span := Start(ctx, name, trace.WithTimestamp(end.Add(-d)), trace.WithAttributes(attrs...))
	if !span.IsRecording() {
		span.End()
		return
	}
	var err error
	if failed {
		if msg == "" {
			msg = "failed"
		}
		err = errors.New(msg)
	}
	endAt(span, err, end)
}
