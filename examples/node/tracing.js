// tracing.js: OpenTelemetry traces for the Node agent. With
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set,
// each task is a span "task <agent>", a child of the span its event's
// W3C traceparent names (the pipeline step or chat tool call that sent it),
// with a child "queue wait" from the event's time to its receipt; spans go
// by OTLP/HTTP (protobuf). Without it the SDK is not even loaded.

import { trace, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode } from "@opentelemetry/api";

const endpoint = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
const enabled = Boolean(endpoint) && process.env.OTEL_SDK_DISABLED !== "true" && process.env.OTEL_TRACES_EXPORTER !== "none";

let provider = null;
let tracer = null;

if (enabled) {
  const { BasicTracerProvider, BatchSpanProcessor } = await import("@opentelemetry/sdk-trace-base");
  const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-proto");
  const { resourceFromAttributes } = await import("@opentelemetry/resources");
  const { W3CTraceContextPropagator } = await import("@opentelemetry/core");
  provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": process.env.OTEL_SERVICE_NAME || "agentmesh-node-agent" }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter(), { scheduledDelayMillis: Number(process.env.OTEL_BSP_SCHEDULE_DELAY || 5000) }),
    ],
  });
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  tracer = provider.getTracer("agentmesh-node-agent");
}

const noop = { result() {}, end() {} };

// traceTask starts the span of one delivery of task (a CloudEvent) received
// at receivedAt (ms since the epoch); call result(res) with its result, and
// end() once it is answered or handed back.
export function traceTask(agent, task, subject, receivedAt, attempt) {
  if (!tracer) return noop;
  const parent = propagation.extract(ROOT_CONTEXT, { traceparent: String(task.traceparent || "") });
  const published = task.time ? Date.parse(task.time) : NaN;
  const start = published < receivedAt ? published : receivedAt;
  const attributes = {
    "agentmesh.agent": agent,
    "agentmesh.task.id": task.id,
    "agentmesh.delivery": attempt,
    "agentmesh.queue_wait_ms": receivedAt - start,
    "messaging.system": "nats",
    "messaging.operation.type": "process",
    "messaging.destination.name": subject,
  };
  for (const [ext, key] of [["runid", "agentmesh.run.id"], ["stepid", "agentmesh.step.id"], ["conversationid", "agentmesh.conversation.id"]]) {
    if (task[ext]) attributes[key] = String(task[ext]);
  }
  const span = tracer.startSpan(`task ${agent}`, { kind: SpanKind.CONSUMER, startTime: new Date(start), attributes }, parent);
  if (start < receivedAt) {
    tracer.startSpan("queue wait", { startTime: new Date(start) }, trace.setSpan(parent, span)).end(new Date(receivedAt));
  }
  return {
    result(res) {
      span.setAttribute("agentmesh.outcome", res.success ? "completed" : "failed");
      if (!res.success) {
        span.setAttribute("agentmesh.error.code", res.error?.code || "");
        span.setStatus({ code: SpanStatusCode.ERROR, message: res.error?.message || "failed" });
      }
    },
    end() {
      span.end();
    },
  };
}

// shutdownTracing flushes the spans still queued.
export async function shutdownTracing() {
  if (provider) await provider.shutdown();
}
