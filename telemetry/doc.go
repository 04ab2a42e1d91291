// Package telemetry is where agentmesh's traces and structured logs hang
// on the mesh. It uses only the OpenTelemetry API: spans go to the global
// TracerProvider, which is a no-op until a process installs one (package
// telemetry/export does, from the standard OTEL_* variables), so tracing
// costs next to nothing when it is off.
//
// Spans join across processes through the W3C traceparent every task,
// chat request and pipeline submission carries as a CloudEvents extension
// (WithTraceParent, TraceParent). A pipeline run and its steps outlive any
// one handler and may end on another replica, so their spans are recorded
// when they end, by the Observer, with span ids derived from the run and
// step ids (RunSpanID, StepSpanID): every replica names them alike, and a
// step's task carries its step span as parent before the span is recorded.
//
// The log Handler adds the current trace and span ids, and the task, run
// and conversation ids put on the context with WithLogAttrs, to every log
// line written with a context.
package telemetry
