package telemetry

import (
	"context"
	"encoding/binary"

	"go.opentelemetry.io/otel/trace"
)

// fnv64 is FNV-1a over parts, each followed by a 0 byte.
func fnv64(salt uint64, parts ...string) uint64 {
	h := uint64(14695981039346656037) ^ salt
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			h ^= uint64(p[i])
			h *= 1099511628211
		}
		h *= 1099511628211 // the separator
	}
	if h == 0 { // W3C forbids an all-zero id
		h = 1
	}
	return h
}

// derivedSpanID is the span id derived from parts.
func derivedSpanID(parts ...string) trace.SpanID {
	var id trace.SpanID
	binary.BigEndian.PutUint64(id[:], fnv64(0, parts...))
	return id
}

// RunSpanID is the span id of pipeline run runID's span.
func RunSpanID(runID string) trace.SpanID { return derivedSpanID("run", runID) }

// StepSpanID is the span id of the span of step stepID of run runID.
func StepSpanID(runID, stepID string) trace.SpanID { return derivedSpanID("step", runID, stepID) }

// RunTraceID is the trace id of a run submitted without a valid
// traceparent: derived from its id, so every replica agrees on it.
func RunTraceID(runID string) trace.TraceID {
	var id trace.TraceID
	binary.BigEndian.PutUint64(id[:8], fnv64(0, "trace", runID))
	binary.BigEndian.PutUint64(id[8:], fnv64(1, "trace", runID))
	return id
}

// runParent is the span context a run's span is a child of: submitted,
// the submission's, when valid (ok), else an invalid one with the derived
// trace id (the run's span is then a root).
func runParent(submitted trace.SpanContext, runID string) (sc trace.SpanContext, ok bool) {
	if submitted.IsValid() {
		return submitted, true
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: RunTraceID(runID), TraceFlags: trace.FlagsSampled}), false
}

// runSpanContext is the span context of run runID's span.
func runSpanContext(submitted trace.SpanContext, runID string) trace.SpanContext {
	parent, _ := runParent(submitted, runID)
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: parent.TraceID(), SpanID: RunSpanID(runID),
		TraceFlags: parent.TraceFlags(), Remote: true})
}

// StepTraceParent is the traceparent of the task of step stepID of run
// runID, submitted with traceparent submitted: its trace is the
// submission's (or the run's derived trace), its parent span the step's
// span, recorded when the step ends (see Observer).
func StepTraceParent(submitted, runID, stepID string) string {
	parent, _ := runParent(SpanContextOf(submitted), runID)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: parent.TraceID(), SpanID: StepSpanID(runID, stepID),
		TraceFlags: parent.TraceFlags(), Remote: true})
	return TraceParent(trace.ContextWithRemoteSpanContext(context.Background(), sc))
}

// wantedIDs are the ids the next span started with a context should get.
type wantedIDs struct {
	trace trace.TraceID // zero: the parent's (or a new one)
	span  trace.SpanID
}

type wantedKey struct{}

// withIDs asks the ID generator (export.IDGenerator) to give the span
// started with the returned context span id span and, when it is a root,
// trace id tid. Only for a span started and ended at once: its children
// must not be started with that context.
func withIDs(ctx context.Context, tid trace.TraceID, span trace.SpanID) context.Context {
	return context.WithValue(ctx, wantedKey{}, wantedIDs{trace: tid, span: span})
}

// WantedIDs returns the ids asked for the span being started with ctx (see
// export.IDGenerator); ok is false when none were.
func WantedIDs(ctx context.Context) (tid trace.TraceID, sid trace.SpanID, ok bool) {
	w, ok := ctx.Value(wantedKey{}).(wantedIDs)
	return w.trace, w.span, ok
}
