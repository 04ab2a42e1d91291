package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of agentmesh's spans.
const Scope = "github.com/agentmesh/agentmesh"

// Attribute keys of agentmesh's own span attributes.
const (
	AttrAgent        = attribute.Key("agentmesh.agent")
	AttrTaskID       = attribute.Key("agentmesh.task.id")
	AttrRunID        = attribute.Key("agentmesh.run.id")
	AttrStepID       = attribute.Key("agentmesh.step.id")
	AttrConversation = attribute.Key("agentmesh.conversation.id")
	AttrDelivery     = attribute.Key("agentmesh.delivery")
	AttrOutcome      = attribute.Key("agentmesh.outcome")
	AttrCode         = attribute.Key("agentmesh.error.code")
	AttrStatus       = attribute.Key("agentmesh.status")
	AttrCost         = attribute.Key("agentmesh.cost_usd")
)

// Tracer returns the tracer of agentmesh's spans from the global provider.
// It is looked up on each call, so a provider installed later (or swapped
// in a benchmark) takes effect at once.
func Tracer() trace.Tracer { return otel.GetTracerProvider().Tracer(Scope) }

// Start starts a span named name with the tracer of agentmesh.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return Tracer().Start(ctx, name, opts...)
}

// w3c is the W3C Trace Context propagator: the wire format of the
// traceparent extension is fixed, whatever the process's global
// propagator is.
var w3c = propagation.TraceContext{}

// WithTraceParent returns ctx with the span context a W3C traceparent
// names as its remote parent. An empty or invalid traceparent leaves ctx
// as it is (a span started from it is a root).
func WithTraceParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// TraceParent returns the W3C traceparent of ctx's span, "" when ctx holds
// no valid span context (tracing off and no remote parent).
func TraceParent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c["traceparent"]
}

// SpanContextOf returns the span context a traceparent names (invalid when
// it names none).
func SpanContextOf(traceparent string) trace.SpanContext {
	return trace.SpanContextFromContext(WithTraceParent(context.Background(), traceparent))
}

// End ends span, recording err (when not nil) as its status and error.type.
func End(span trace.Span, err error) {
	fail(span, err)
	span.End()
}

// endAt ends span at t, recording err as End does.
func endAt(span trace.Span, err error, t time.Time) {
	fail(span, err)
	span.End(trace.WithTimestamp(t))
}

func fail(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
	}
}

// errorType is the error.type of err: the sentinel it wraps when it is one
// of context's, else the Go type.
func errorType(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}
