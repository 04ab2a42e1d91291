// tracing.test.ts: with a tracer provider registered (here the
// OpenTelemetry SDK with an in-memory exporter; the SDK itself depends on
// the API only), each task an agent takes is a CONSUMER span "task
// <agent>", a child of the span its traceparent names, and a call to
// another agent is a child of the caller's task span. Against a live mesh
// (NATS_URL). With a context manager registered, the spans the agent's
// work starts are the task span's children.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { SpanKind, SpanStatusCode, context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";

import { Codes, MeshClient, MeshError, defineAgent, run, type AgentContract, type Execute } from "../src/index.js";

const url = process.env.NATS_URL;
if (!url) throw new Error("NATS_URL is not set: these tests need a provisioned mesh (go test ./sdk/typescript/ starts one)");

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
trace.setGlobalTracerProvider(provider);
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

const nc: NatsConnection = await connect({ servers: url, name: "sdk tracing tests" });
const client = new MeshClient(nc);
const stops: Array<() => Promise<void>> = [];
after(async () => {
  for (const s of stops) await s();
  await nc.drain();
  await provider.shutdown();
});

function contract(name: string): AgentContract {
  return {
    name: `${name}-${randomBytes(3).toString("hex")}`,
    capability: "TRANSFORMATION",
    description: `a test agent: ${name}`,
    inputs: [{ name: "text", data_type: "TEXT" }],
    outputs: [{ name: "text", data_type: "TEXT" }],
    timeout_ms: 20000,
  };
}

async function start(c: AgentContract, execute: Execute) {
  const a = await run(nc, defineAgent(c, execute), { handleSignals: false, log: () => undefined });
  stops.push(() => a.stop());
  return a;
}

const text = (s: string) => ({ inputs: { text: { data_type: "TEXT", value: s } } });
const traceID = "0af7651916cd43dd8448eb211c80319c";
const parentID = "b7ad6b7169203331";

// spanOf waits for the ended span of agent's task id (spans end once the task is answered and acked).
async function spanOf(agent: string, id: string): Promise<ReadableSpan> {
  const until = Date.now() + 10_000;
  for (;;) {
    const s = exporter.getFinishedSpans().find((s) => s.name === `task ${agent}` && s.attributes["agentmesh.task.id"] === id);
    if (s) return s;
    if (Date.now() > until) throw new Error(`no span "task ${agent}" for task ${id}; spans: ${exporter.getFinishedSpans().map((s) => s.name).join(", ")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("a task is a CONSUMER span, a child of its traceparent, with the task's ids and outcome", async () => {
  const c = contract("traced");
  const a = await start(c, async (t) => {
    if (t.value<string>("text") === "fail") throw new MeshError(Codes.invalidInput, "no thanks");
    await new Promise((r) => setTimeout(r, 1));
    trace.getTracer("the agent's own").startSpan(`work on ${t.id}`).end(); // after an await: the context follows
    return { outputs: { text: "ok" } };
  });
  const ok = await client.task(c.name, text("hi"), { traceparent: `00-${traceID}-${parentID}-01` });
  assert.equal(ok.result.success, true);
  assert.equal(ok.event.ext.traceparent, `00-${traceID}-${parentID}-01`, "the result carries the task's traceparent");
  const s = await spanOf(c.name, ok.event.ext.taskid);
  assert.equal(s.kind, SpanKind.CONSUMER);
  assert.equal(s.spanContext().traceId, traceID);
  assert.equal(s.parentSpanContext?.spanId, parentID);
  assert.equal(s.attributes["agentmesh.agent"], c.name);
  assert.equal(s.attributes["agentmesh.instance"], a.instanceId);
  assert.equal(s.attributes["agentmesh.delivery"], 1);
  assert.equal(s.attributes["agentmesh.outcome"], "completed");
  assert.equal(s.attributes["messaging.system"], "nats");
  assert.equal(s.attributes["messaging.destination.name"], `mesh.task.${c.name}`);
  assert.equal(s.status.code, SpanStatusCode.UNSET);
  const work = exporter.getFinishedSpans().find((w) => w.name === `work on ${ok.event.ext.taskid}`);
  assert.equal(work?.parentSpanContext?.spanId, s.spanContext().spanId, "a span the agent's work starts is not the task span's child");

  const bad = await client.task(c.name, text("fail"), { traceparent: `00-${traceID}-${parentID}-01` });
  const f = await spanOf(c.name, bad.event.ext.taskid);
  assert.equal(f.attributes["agentmesh.outcome"], "failed");
  assert.equal(f.attributes["agentmesh.error.code"], Codes.invalidInput);
  assert.equal(f.status.code, SpanStatusCode.ERROR);
  assert.equal(f.status.message, "no thanks");

  const direct = await client.call(c.name, text("hi"), { traceparent: `00-${traceID}-${parentID}-01` });
  const d = await spanOf(c.name, direct.event.ext.taskid);
  assert.equal(d.parentSpanContext?.spanId, parentID);
  assert.equal(d.attributes["messaging.destination.name"], `mesh.call.${c.name}`);
});

test("without a traceparent a task span starts a trace; a call to another agent is a child of the caller's span", async () => {
  const callee = contract("callee");
  await start(callee, () => ({ outputs: { text: "from callee" } }));
  const caller = contract("caller");
  await start(caller, async (t) => {
    const r = await t.call(callee.name, text("x"));
    return { outputs: { text: String(r.outputs?.text.value) } };
  });
  const { result, event } = await client.task(caller.name, text("go"));
  assert.equal(result.success, true, JSON.stringify(result));
  const outer = await spanOf(caller.name, event.ext.taskid);
  assert.equal(outer.parentSpanContext, undefined);
  const inner = exporter.getFinishedSpans().find((s) => s.name === `task ${callee.name}`);
  assert.ok(inner, "no span of the callee's task");
  assert.equal(inner.spanContext().traceId, outer.spanContext().traceId);
  assert.equal(inner.parentSpanContext?.spanId, outer.spanContext().spanId);
});
