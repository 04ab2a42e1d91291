// mesh.test.ts: the SDK against a live mesh (NATS_URL, a provisioned
// server the Go test sdk_test.go starts). Each test runs its own agent
// under a name of its own, in this process, and talks to it as a client.
//
//   NATS_URL=nats://127.0.0.1:4222 node --test dist/test/

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";

import { Codes, EventTypes, MeshClient, MeshError, RetryableError, decode, defineAgent, maxStepBytes, run, type AgentContract, type Execute, type RunOptions } from "../src/index.js";

const url = process.env.NATS_URL;
if (!url) throw new Error("NATS_URL is not set: these tests need a provisioned mesh (go test ./sdk/typescript/ starts one)");

const nc: NatsConnection = await connect({ servers: url, name: "sdk tests" });
const client = new MeshClient(nc);
const stops: Array<() => Promise<void>> = [];
after(async () => {
  for (const s of stops) await s();
  await nc.drain();
});

const quiet = () => undefined;

function contract(name: string, extra: Partial<AgentContract> = {}): AgentContract {
  return {
    name: `${name}-${randomBytes(3).toString("hex")}`,
    version: "1.0.0",
    capability: "TRANSFORMATION",
    description: `a test agent: ${name}`,
    inputs: [{ name: "text", data_type: "TEXT" }],
    outputs: [{ name: "text", data_type: "TEXT" }],
    timeout_ms: 20000,
    ...extra,
  };
}

async function start(c: AgentContract, execute: Execute, opts: RunOptions = {}) {
  const a = await run(nc, defineAgent(c, execute), { handleSignals: false, log: quiet, backoffMs: [50], ...opts });
  stops.push(() => a.stop());
  return a;
}

const text = (s: string) => ({ inputs: { text: { data_type: "TEXT", value: s } } });

test("a durable task: validated, answered on its result subject with result-<taskid>, then acked", async () => {
  const c = contract("upper", { params: { type: "object", properties: { times: { type: "integer", minimum: 1 } }, additionalProperties: false } });
  await start(c, (t) => ({ summary: "upper", outputs: { text: String(t.value<string>("text")).toUpperCase().repeat(Number(t.params.times || 1)) } }));
  const { result, event } = await client.task(c.name, { ...text("hi"), params: { times: 2 } });
  assert.equal(result.success, true, JSON.stringify(result));
  assert.equal(result.outputs?.text.value, "HIHI");
  assert.equal(result.outputs?.text.source, c.name);
  assert.equal(event.type, EventTypes.taskCompleted);
  assert.equal(result.metrics?.attempt, 1);
  const jsm = await jetstreamManager(nc);
  const stored = await jsm.streams.getMessage("MESH_RESULTS", { last_by_subj: `mesh.result.${c.name}.${event.ext.taskid}` });
  assert.equal(stored?.header.get("Nats-Msg-Id"), `result-${event.ext.taskid}`);

  const bad = await client.task(c.name, { inputs: { text: { data_type: "TEXT", value: 42 }, extra: { data_type: "TEXT", value: "x" } } });
  assert.equal(bad.result.error?.code, Codes.invalidInput);
  assert.match(bad.result.error!.message, /input "text" \(TEXT\) value/);
  assert.match(bad.result.error!.message, /input "extra" is not declared/);
  assert.equal(bad.event.type, EventTypes.taskFailed);

  const params = await client.task(c.name, { ...text("x"), params: { times: 0 } });
  assert.equal(params.result.error?.code, Codes.invalidParams);
  assert.match(params.result.error!.message, /times/);
});

test("a retryable failure is redelivered with back-off until it succeeds", async () => {
  const c = contract("flaky");
  await start(c, (t) => {
    if (t.attempt < 3) throw new RetryableError(`store down on attempt ${t.attempt}`);
    return { outputs: { text: `ok on ${t.attempt}` } };
  });
  const { result } = await client.task(c.name, text("x"));
  assert.equal(result.success, true, JSON.stringify(result));
  assert.equal(result.outputs?.text.value, "ok on 3");
  assert.equal(result.metrics?.attempt, 3);
});

test("the last delivery dead-letters the task and answers retries_exhausted", async () => {
  const c = contract("doomed");
  await start(c, () => {
    throw new RetryableError("the model endpoint is down");
  }, { maxDeliver: 3 });
  const id = await client.send(c.name, text("x"));
  const { result } = await client.result(c.name, id);
  assert.equal(result.error?.code, Codes.retriesExhausted);
  assert.match(result.error!.message, /gave up after 3 deliveries: the model endpoint is down/);
  const jsm = await jetstreamManager(nc);
  const dead = await jsm.streams.getMessage("MESH_DEAD", { last_by_subj: `mesh.dead.${c.name}` });
  assert.ok(dead, "no dead letter");
  assert.equal(dead.header.get("Agentmesh-Dead-Code"), Codes.retriesExhausted);
  assert.equal(dead.header.get("Agentmesh-Dead-Deliveries"), "3");
  assert.equal(dead.header.get("Agentmesh-Dead-Agent"), c.name);
  assert.equal(dead.header.get("Agentmesh-Dead-Stream"), "MESH_TASKS");
  assert.equal(dead.header.get("ce-id"), id);
});

test("a task that is not a task event is refused with malformed_event", async () => {
  const c = contract("strict");
  await start(c, () => ({ outputs: { text: "never" } }));
  const js = (await import("@nats-io/jetstream")).jetstream(nc);
  const { headers } = await import("@nats-io/nats-core");
  const h = headers();
  h.set("ce-specversion", "1.0");
  h.set("ce-id", "t-malformed-1");
  h.set("ce-source", "test");
  h.set("ce-type", "io.agentmesh.task.requested");
  h.set("ce-replyto", "mesh.conversations.somebody");
  await js.publish(`mesh.task.${c.name}`, "{}", { headers: h });
  const { result } = await client.result(c.name, "t-malformed-1");
  assert.equal(result.error?.code, Codes.malformedEvent);
  assert.match(result.error!.message, /replyto "mesh.conversations.somebody" is not one of this agent's result subjects/);
});

test("a cancel request stops the running task, which answers cancelled", async () => {
  const c = contract("slow");
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  const a = await start(c, (t) => {
    started();
    return new Promise((_, reject) => t.signal.addEventListener("abort", () => reject(t.signal.reason)));
  });
  const id = await client.send(c.name, text("x"));
  await running;
  assert.equal(await client.cancel(c.name, id), a.instanceId);
  const { result } = await client.result(c.name, id);
  assert.equal(result.error?.code, Codes.cancelled);
  assert.match(result.error!.message, new RegExp(`task ${id} .*cancelled by request`));
});

test("stop drains: the running task finishes and is answered, then the instance departs", async () => {
  const c = contract("drain");
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  const a = await run(nc, defineAgent(c, async () => {
    started();
    await gate;
    return { outputs: { text: "finished" } };
  }), { handleSignals: false, log: quiet });
  const kv = await new Kvm(nc).open("mesh_agents");
  assert.ok(await kv.get(`${c.name}.${a.instanceId}`), "no registry key while running");
  const live = await client.agents();
  assert.ok(live.some((x) => x.contract.name === c.name && x.instance.id === a.instanceId), "the registry query did not list the instance");
  const departures = nc.subscribe(`mesh.registry.depart.${c.name}`, { max: 1 });
  const id = await client.send(c.name, text("x"));
  await running;
  let stopped = false;
  const stopping = a.stop().then(() => (stopped = true));
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(stopped, false, "stop returned while a task was running");
  release();
  await stopping;
  const { result } = await client.result(c.name, id);
  assert.equal(result.success, true);
  assert.equal(result.outputs?.text.value, "finished");
  for await (const m of departures) {
    const ev = decode(m);
    assert.equal(ev.type, EventTypes.agentDeparted);
    assert.deepEqual(ev.data, { agent: c.name, instance: a.instanceId });
  }
  const e = await kv.get(`${c.name}.${a.instanceId}`);
  assert.ok(!e || e.operation !== "PUT", "the registry key outlived the departure");
  await a.stop(); // twice is fine
});

test("stop after the connection is gone returns", async () => {
  const own = await connect({ servers: url! });
  const a = await run(own, defineAgent(contract("gone"), () => ({ outputs: { text: "x" } })), { handleSignals: false, log: quiet });
  await own.close();
  await a.stop();
  await a.stopped;
});

test("a direct call on the micro endpoint: the reply is the result, failures carry micro's error headers", async () => {
  const c = contract("direct", { params: { type: "object", properties: { op: { enum: ["upper", "lower"] } } } });
  const a = await start(c, (t) => ({ outputs: { text: t.params.op === "lower" ? String(t.value("text")).toLowerCase() : String(t.value("text")).toUpperCase() } }));
  const { result, event } = await client.call(c.name, { ...text("Mesh"), params: { op: "lower" } }, { id: "t-direct-ok" });
  assert.equal(result.outputs?.text.value, "mesh");
  assert.equal(event.ext.taskid, "t-direct-ok");

  const m = (await import("../src/cloudevents.js")).encode(
    (await import("../src/cloudevents.js")).newEvent(EventTypes.taskRequested, "test", { ...text("x"), params: { op: "shout" } }, {}, "t-direct-bad"),
  );
  const reply = await nc.request(`mesh.call.${c.name}`, m.data, { headers: m.headers, timeout: 5000 });
  assert.equal(reply.headers?.get("Nats-Service-Error-Code"), "400");
  assert.match(reply.headers!.get("Nats-Service-Error"), /^invalid_params: /);
  assert.equal((decode(reply).data as { error: { code: string } }).error.code, Codes.invalidParams);

  // The service is visible to micro's discovery, with its endpoint.
  const info = JSON.parse(new TextDecoder().decode((await nc.request(`$SRV.INFO.${c.name}`, "", { timeout: 2000 })).data));
  assert.equal(info.name, c.name);
  assert.equal(info.metadata.instance, a.instanceId);
  assert.equal(info.endpoints[0].subject, `mesh.call.${c.name}`);
  assert.equal(info.endpoints[0].queue_group, "q");

  await assert.rejects(client.call("NoSuchAgent", text("x"), { waitMs: 2000 }), (err: MeshError) => err.code === Codes.unavailable);
});

test("a declared data type is announced, and an output that breaks its schema fails the task", async () => {
  const c = contract("typed", {
    outputs: [{ name: "freq", data_type: "LETTER_COUNTS", mergeable: true }],
    data_types: [{ name: "LETTER_COUNTS", description: "letter -> count", schema: { type: "object", additionalProperties: { type: "integer", minimum: 1 } }, merge: "sum" }],
  });
  const a = await start(c, (t) => {
    const s = String(t.value("text"));
    if (s === "forge") return { outputs: { freq: { a: 0 } } };
    const freq: Record<string, number> = {};
    for (const ch of s) freq[ch] = (freq[ch] || 0) + 1;
    return { outputs: { freq } };
  });
  const kv = await new Kvm(nc).open("mesh_agents");
  const ann = (await kv.get(`${c.name}.${a.instanceId}`))!.json<{ contract: AgentContract }>();
  assert.equal(ann.contract.data_types?.[0].merge, "sum");
  const ok = await client.task(c.name, text("aab"));
  assert.deepEqual(ok.result.outputs?.freq, { ...ok.result.outputs!.freq, data_type: "LETTER_COUNTS", value: { a: 2, b: 1 } });
  const forged = await client.task(c.name, text("forge"));
  assert.equal(forged.result.error?.code, Codes.agentError);
  assert.match(forged.result.error!.message, /output "freq" \(LETTER_COUNTS\) value \/a: must be >= 1/);

  assert.throws(
    () => defineAgent(contract("untyped", { outputs: [{ name: "x", data_type: "NOT_DECLARED" }] }), () => ({})),
    /unknown data type "NOT_DECLARED"; declare it in data_types/,
  );
  assert.throws(
    () => defineAgent(contract("shadow", { data_types: [{ name: "TEXT", description: "mine" }] }), () => ({})),
    /TEXT is a built-in data type; give yours another name/,
  );
});

test("spilled collections: a large FILE_IDS value goes through the object store both ways", async () => {
  const c = contract("files", {
    inputs: [{ name: "documents", data_type: "FILE_IDS" }],
    outputs: [{ name: "documents", data_type: "FILE_IDS" }],
  });
  await start(c, async (t) => {
    const ids = await t.fileIDs("documents");
    return { summary: `${ids.length} ids, last ${ids[ids.length - 1]}`, outputs: { documents: await t.files.collection(ids.slice(1), "documents") } };
  }, { maxCollection: 20000 });
  const ids = Array.from({ length: 15000 }, (_, i) => `f-${String(i).padStart(20, "0")}`);
  const files = new (await import("../src/files.js")).Files(nc, client.names);
  const spilled = await files.collection(ids, "documents");
  assert.match(String(spilled.collection_ref), /^collections\/[0-9a-f]{64}$/);
  assert.equal(spilled.ids, undefined);
  const { result } = await client.task(c.name, { inputs: { documents: { data_type: "FILE_IDS", value: spilled } } });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.equal(result.summary, `15000 ids, last ${ids[14999]}`);
  const out = result.outputs!.documents.value as { collection_ref?: string; count: number };
  assert.equal(out.count, 14999);
  assert.deepEqual(await files.ids(out), ids.slice(1));

  const tooMany = await files.collection(Array.from({ length: 25000 }, (_, i) => `f-${String(i).padStart(20, "1")}`));
  const limited = await client.task(c.name, { inputs: { documents: { data_type: "FILE_IDS", value: tooMany } } });
  assert.equal(limited.result.error?.code, Codes.limitExceeded);
  assert.match(limited.result.error!.message, /25000 file ids; this agent resolves at most 20000/);

  const fileID = await files.store("hello files", { filename: "hello.txt" });
  assert.match(fileID, /^f-[a-z2-7]{20}$/);
  assert.equal(new TextDecoder().decode(await files.read(fileID)), "hello files");
  await assert.rejects(files.read("f-doesnotexist"), (err: MeshError) => err.code === Codes.notFound);
});

test("owners' files: a client's task stores into the client's bucket and reads it and the shared one; an owner without a bucket uses the shared one", async () => {
  const { Objm } = await import("@nats-io/obj");
  const { Files } = await import("../src/files.js");
  const owner = `own${randomBytes(3).toString("hex")}`;
  const bucket = client.names.clientFilesStore(owner);
  const mine = await new Objm(nc).create(bucket); // as admin makes it (bus.ProvisionClientFiles)
  const shared = new Files(nc, client.names);
  const old = await shared.store("a shared page");
  const files = shared.forOwner(owner);
  const id = await files.store("the owner's page");
  assert.ok(await mine.info(id), `${id} is not in ${bucket}`);
  assert.equal(await (await new Objm(nc).open(client.names.filesStore)).info(id), null, `${id} is in the shared bucket too`);
  assert.equal(new TextDecoder().decode(await files.read(id)), "the owner's page");
  assert.equal(new TextDecoder().decode(await files.read(old)), "a shared page"); // a ref from before buckets had owners
  await assert.rejects(shared.read(id), (err: MeshError) => err.code === Codes.notFound);
  await assert.rejects(shared.forOwner(`other${owner}`).read(id), (err: MeshError) => err.code === Codes.notFound);
  const nobucket = await shared.forOwner(`nobucket${owner}`).store("no bucket of its own");
  assert.equal(new TextDecoder().decode(await shared.read(nobucket)), "no bucket of its own");
  await mine.destroy();
});

test("an agent calls another agent, which answers at depth 1; a call to an agent with no live instance is unknown_agent", async () => {
  const callee = contract("callee");
  await start(callee, (t) => ({ outputs: { text: `callee saw ${t.value("text")} at depth ${t.event.ext.calldepth}` }, metrics: { tokens: { prompt: 5, completion: 2 } } }));
  const caller = contract("caller");
  await start(caller, async (t) => {
    const r = await t.call(callee.name, text(String(t.value("text"))));
    return { outputs: { text: String(r.outputs?.text.value) } };
  });
  const { result } = await client.task(caller.name, { ...text("hello") }, { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.equal(result.outputs?.text.value, "callee saw hello at depth 1");
  assert.deepEqual(result.metrics?.tokens, { prompt: 5, completion: 2 });

  const missing = contract("lonely");
  await start(missing, async (t) => {
    await t.call("NobodyHome", text("x"));
    return {};
  }, { callGraceMs: 200 });
  const r = await client.task(missing.name, text("x"));
  assert.equal(r.result.error?.code, Codes.unknownAgent);
  assert.match(r.result.error!.message, /agent NobodyHome has no live instance/);
});

test("the result and progress carry the task's traceparent and correlation extensions", async () => {
  const c = contract("traced");
  await start(c, (t) => {
    t.progress("halfway", 50);
    return { outputs: { text: "ok" } };
  });
  const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  const progress = nc.subscribe("mesh.events.t-traced-1.task", { max: 1 });
  const { event } = await client.task(c.name, text("x"), { traceparent: tp, id: "t-traced-1" });
  assert.equal(event.ext.traceparent, tp);
  assert.equal(event.ext.taskid, "t-traced-1");
  for await (const m of progress) {
    const ev = decode(m);
    assert.equal(ev.type, EventTypes.taskProgress);
    assert.equal(ev.ext.traceparent, tp);
    assert.equal(ev.ext.taskid, "t-traced-1");
    assert.deepEqual(ev.data, { taskid: "t-traced-1", agent: c.name, message: "halfway", percent: 50 });
  }
});

test("a task deeper in a chain of calls than its maxcalldepth is refused with call_depth before it runs", async () => {
  const c = contract("deep");
  let ran = false;
  await start(c, () => {
    ran = true;
    return { outputs: { text: "ran" } };
  });
  const { encode, newEvent } = await import("../src/cloudevents.js");
  const js = (await import("@nats-io/jetstream")).jetstream(nc);
  for (const [id, depth, max, code] of [
    ["t-deep-1", "5", "4", Codes.callDepth],
    ["t-deep-2", "two", "4", Codes.malformedEvent],
  ]) {
    const m = encode(newEvent(EventTypes.taskRequested, "test", text("x"), { calldepth: depth, maxcalldepth: max }, id));
    await js.publish(`mesh.task.${c.name}`, m.data, { headers: m.headers, msgID: id });
    const { result } = await client.result(c.name, id);
    assert.equal(result.error?.code, code, JSON.stringify(result));
  }
  assert.equal(ran, false);
});

test("steps: recorded once in mesh_steps, a redelivery gets the record and does not run the step again", async () => {
  const c = contract("stepper");
  const ran: string[] = [];
  await start(c, async (t) => {
    const parts: string[] = [];
    for (let i = 0; i < 3; i++) {
      if (t.attempt === 1 && i === 2) throw new RetryableError("crash after two steps");
      parts.push(await t.step("work", (key) => (ran.push(key), `part ${i} (${key})`)));
    }
    return { outputs: { text: parts.join("; ") } };
  });
  const { result, event } = await client.task(c.name, text("x"));
  assert.equal(result.success, true, JSON.stringify(result));
  assert.equal(result.metrics?.attempt, 2);
  const id = event.ext.taskid;
  assert.deepEqual(ran, [`${id}.work.0`, `${id}.work.1`, `${id}.work.2`], "each step ran once over two deliveries");
  assert.equal(result.outputs?.text.value, `part 0 (${id}.work.0); part 1 (${id}.work.1); part 2 (${id}.work.2)`);
  const kv = await new Kvm(nc).open("mesh_steps");
  const e = await kv.get(`${id}.work.1`);
  assert.equal(e?.string(), JSON.stringify(`part 1 (${id}.work.1)`), "the value is the step's result as JSON");

  const big = contract("bigstep");
  await start(big, async (t) => ({ outputs: { text: await t.step("fetch", () => "x".repeat(maxStepBytes)) } }));
  const refused = await client.task(big.name, text("x"));
  assert.equal(refused.result.error?.code, Codes.stepTooLarge);
  assert.match(refused.result.error!.message, /over the step journal's limit of 524288/);
});
