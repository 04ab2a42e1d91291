// tracing.js: where the Node agent's traces go. The SDK records a span per
// task on the OpenTelemetry API ("task <agent>", a child of the span its
// event's W3C traceparent names, with a child "queue wait"), which costs
// nothing until a tracer provider is registered. With
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set,
// this registers one that sends them by OTLP/HTTP (protobuf) as service
// OTEL_SERVICE_NAME (agentmesh-node-agent); without it the OpenTelemetry
// SDK is not even loaded.

import { trace } from "@opentelemetry/api";

const endpoint = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
const enabled = Boolean(endpoint) && process.env.OTEL_SDK_DISABLED !== "true" && process.env.OTEL_TRACES_EXPORTER !== "none";

let provider = null;

if (enabled) {
  const { BasicTracerProvider, BatchSpanProcessor } = await import("@opentelemetry/sdk-trace-base");
  const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-proto");
  const { resourceFromAttributes } = await import("@opentelemetry/resources");
  provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": process.env.OTEL_SERVICE_NAME || "agentmesh-node-agent" }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter(), { scheduledDelayMillis: Number(process.env.OTEL_BSP_SCHEDULE_DELAY || 5000) }),
    ],
  });
  trace.setGlobalTracerProvider(provider);
}

// shutdownTracing flushes the spans still queued.
export async function shutdownTracing() {
  if (provider) await provider.shutdown();
}
