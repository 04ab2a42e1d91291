// tracing.ts: the span of each task an agent takes, on the OpenTelemetry
// API only. It is a no-op until the application registers a tracer
// provider (an OpenTelemetry SDK of its choice, with its exporter); then
// each delivery is a span "task <agent>" of kind CONSUMER, a child of the
// span the task's W3C traceparent names (the pipeline step or chat tool
// call that sent it), as the Go runtime records it (agents/trace.go).

import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, context, trace, type Attributes, type Context, type Span } from "@opentelemetry/api";

import type { MeshEvent } from "./cloudevents.js";
import type { AgentResult } from "./types.gen.js";

const tracer = () => trace.getTracer("@agentmesh/sdk", "0.1.0");

const traceparentPattern = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** parentContext returns the context of the span traceparent names, or the root context when it names none. */
export function parentContext(traceparent: string | undefined): Context {
  const m = traceparentPattern.exec(traceparent || "");
  if (!m || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: m[1],
    spanId: m[2],
    traceFlags: parseInt(m[3], 16) & TraceFlags.SAMPLED,
    isRemote: true,
  });
}

/** The span of one delivery of a task. */
export interface TaskSpan {
  /** the traceparent of this span, for what the task sends on (its calls); undefined when nothing records */
  readonly traceparent?: string;
  /**
   * within runs fn in the span's context: with a context manager
   * registered (the OpenTelemetry Node SDK registers one), spans the
   * agent's work starts are the task span's children.
   */
  within<T>(fn: () => T): T;
  /** end records how the delivery ended (completed, failed, retry, dead_letter, duplicate) and ends the span */
  end(outcome: string, res?: AgentResult): void;
}

/**
 * startTaskSpan starts the span of one delivery of task ev, received at
 * receivedAt (ms since the epoch) on subject. The span begins when the task
 * was published (its event time), with a child "queue wait" up to its
 * receipt.
 */
export function startTaskSpan(agent: string, instance: string, ev: MeshEvent, subject: string, receivedAt: number, attempt: number): TaskSpan {
  const parent = parentContext(ev.ext.traceparent);
  const published = ev.time ? Date.parse(ev.time) : NaN;
  const start = published < receivedAt ? published : receivedAt;
  const attributes: Attributes = {
    "agentmesh.agent": agent,
    "agentmesh.task.id": ev.id,
    "agentmesh.delivery": attempt,
    "agentmesh.instance": instance,
    "agentmesh.queue_wait_ms": receivedAt - start,
    "messaging.system": "nats",
    "messaging.operation.type": "process",
    "messaging.destination.name": subject,
    "messaging.message.id": ev.id,
  };
  for (const [ext, key] of [
    ["runid", "agentmesh.run.id"],
    ["stepid", "agentmesh.step.id"],
    ["conversationid", "agentmesh.conversation.id"],
  ]) {
    if (ev.ext[ext]) attributes[key] = ev.ext[ext];
  }
  const span: Span = tracer().startSpan(`task ${agent}`, { kind: SpanKind.CONSUMER, startTime: new Date(start), attributes }, parent);
  if (!span.isRecording()) return { within: (fn) => fn(), end: () => span.end() };
  if (start < receivedAt) {
    tracer().startSpan("queue wait", { startTime: new Date(start) }, trace.setSpan(parent, span)).end(new Date(receivedAt));
  }
  const sc = span.spanContext();
  return {
    within: (fn) => context.with(trace.setSpan(parent, span), fn),
    traceparent: `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, "0")}`,
    end(outcome: string, res?: AgentResult) {
      span.setAttribute("agentmesh.outcome", outcome);
      if (res && !res.success && outcome !== "duplicate") {
        span.setAttribute("agentmesh.error.code", res.error?.code || "");
        span.setStatus({ code: SpanStatusCode.ERROR, message: res.error?.message || "failed" });
      }
      span.end();
    },
  };
}
