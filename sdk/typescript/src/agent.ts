// agent.ts: the agent runtime. defineAgent checks a contract and pairs it
// with the agent's own work; run does every duty docs/protocol.md
// ("Writing an agent") asks of an agent instance:
//
//   1. announce (event, registry key with a TTL of three heartbeats, answers
//      to registry queries) and heartbeat;
//   2. consume tasks from the durable pull consumer named after the agent;
//   3. validate each task (event, task.schema.json, inputs against the
//      contract and their types' schemas, params, deadline, call depth);
//   4. execute under the deadline with in-progress acks, progress events and
//      cancel requests;
//   5. publish the result (Nats-Msg-Id result-<taskid>), then ack;
//   6. retry with back-off, dead-letter after the last delivery;
//   7. drain and depart on SIGTERM;
// plus the micro endpoint for direct calls, declared data types, files and
// spilled collections, agent-to-agent calls, traceparent and a span per
// task (tracing.ts).

import { hostname } from "node:os";
import { randomBytes, createHash } from "node:crypto";
import { headers as newHeaders, nanos, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/nats-core";
import { jetstream, jetstreamManager, AckPolicy, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { Svcm, type Service, type ServiceMsg } from "@nats-io/services";

import { decode, encode, newEvent, rawAttrs, type MeshEvent } from "./cloudevents.js";
import { Codes, MeshError, RetryableError, messageOf, serviceErrorCode } from "./errors.js";
import { Files, defaultMaxCollection } from "./files.js";
import { EventTypes, Names, agentNamePattern, deadHeaders, idPattern } from "./names.js";
import { openReader } from "./reader.js";
import { Schemas, problems } from "./schemas.js";
import { startTaskSpan, type TaskSpan } from "./tracing.js";
import { Credentials, envCredentials, headerSignature, taskTag, userOf, type Identity } from "./signing.js";
import type { AgentContract, AgentResult, Announcement, FileCollection, TaskRequest, TypedValue } from "./types.gen.js";

/** What execute returns: a summary and the outputs by the contract's output names (plain values; the runtime types them). */
export interface Outcome {
  summary?: string;
  outputs?: Record<string, unknown>;
  /** tokens, cost and model time the agent used (calls to other agents are added by the runtime) */
  metrics?: { tokens?: { prompt?: number; completion?: number }; cost?: number; model_ms?: number };
}

/** How an agent-to-agent call names its callee: an agent's name, or what it offers. */
export type CallTarget = string | { capability?: string; dataType?: string };

/** TaskContext is what execute gets for one task. */
export interface TaskContext {
  /** the task id (the task event's id) */
  readonly id: string;
  readonly event: MeshEvent<TaskRequest>;
  readonly inputs: Record<string, TypedValue>;
  readonly params: Record<string, unknown>;
  readonly instruction: string;
  /** which delivery of the task this is, from 1 */
  readonly attempt: number;
  /** when the task must be finished, if it has a time budget */
  readonly deadline?: Date;
  /** aborted at the deadline, on a cancel request, and when the agent stops */
  readonly signal: AbortSignal;
  /** true on the direct path (mesh.call.<agent>) */
  readonly direct: boolean;
  /** the task's W3C traceparent, carried onto its result, progress and calls */
  readonly traceparent?: string;
  /** value returns the value of input name, or undefined when it was not given */
  value<T = unknown>(name: string): T | undefined;
  /** fileIDs returns the file ids of a FILE_IDS input, resolving a spilled collection */
  fileIDs(name: string): Promise<string[]>;
  /** the mesh's object store: read and store files (the task owner's bucket first), build (and spill) collections */
  readonly files: Files;
  /** progress publishes an io.agentmesh.task.progress event (best effort) */
  progress(message: string, percent?: number): void;
  /** call sends a task to another agent over the durable path and returns its result; a failure throws a MeshError with the callee's code */
  call(target: CallTarget, task: TaskRequest): Promise<AgentResult>;
  /**
   * step runs fn as the step called name (1 to 64 letters, digits, - or _)
   * of the task's journal (docs/durability.md): the first time fn runs and
   * its result, as JSON, is recorded in the mesh_steps bucket under
   * <task>.<name>.<n>; on a redelivery the recorded result is returned and
   * fn does not run. fn gets that key: pass it to an effect as its
   * idempotency key. A failed fn records nothing. Steps must be taken in
   * the same order on every delivery; a result over 512 KiB throws
   * step_too_large.
   */
  step<T>(name: string, fn: (key: string) => Promise<T> | T): Promise<T>;
}

/** The largest step result the journal records (bus.MaxStepValue). */
export const maxStepBytes = 512 * 1024;

const stepNamePattern = /^[A-Za-z0-9_-]{1,64}$/;

export type Execute = (task: TaskContext) => Promise<Outcome> | Outcome;

/** An agent: its contract and its work. */
export interface AgentDefinition {
  readonly contract: AgentContract;
  readonly execute: Execute;
}

/** Options of run. */
export interface RunOptions {
  /** tasks run at once (4) */
  concurrency?: number;
  /** the deployment's prefix (AGENTMESH_PREFIX, else "mesh") */
  prefix?: string;
  /** this instance's id (random) */
  instanceId?: string;
  /** heartbeat interval in ms (5000); the registry key lives three of them */
  heartbeatMs?: number;
  /** the durable consumer's AckWait in ms (30000) and MaxDeliver (5): every instance of an agent must use the same */
  ackWaitMs?: number;
  maxDeliver?: number;
  /** delays of the redeliveries of a retryable failure, the last repeating (1 s, 5 s, 15 s) */
  backoffMs?: number[];
  /** serve direct calls on mesh.call.<agent> through a NATS micro service (true) */
  direct?: boolean;
  /** on SIGTERM and SIGINT: drain, depart and close the connection (true) */
  handleSignals?: boolean;
  /** how long a call by name waits for its callee to appear (5000 ms) */
  callGraceMs?: number;
  /** the deepest chain of agent-to-agent calls (4) and the most calls one task may make (16) */
  maxCallDepth?: number;
  maxCalls?: number;
  /** the most file ids a spilled collection may resolve to (100,000) */
  maxCollection?: number;
  /** where the runtime logs what goes wrong (console.error) */
  log?: (message: string) => void;
  /** the JSON Schemas (the package's copy of schemas/json) */
  schemas?: Schemas;
  /**
   * on a secure mesh, the agent's credentials (by default those of the
   * NATS_CREDS file, when set): it signs the tasks it sends and takes only
   * tasks signed by an identity of the mesh whose replyto lies in that
   * identity's result subjects. null turns both off.
   */
  credentials?: Credentials | null;
}

/** A running agent instance. */
export interface RunningAgent {
  readonly instanceId: string;
  readonly announcement: Announcement;
  /** stop stops taking tasks (the micro endpoint first), lets running tasks finish, departs; safe to call twice */
  stop(): Promise<void>;
  /** resolves once the instance has departed */
  readonly stopped: Promise<void>;
}

/**
 * defineAgent pairs a contract with the agent's work. It throws, naming
 * every problem, when the contract fails contract.schema.json or declares
 * an output data type that is neither built in nor in its data_types.
 */
export function defineAgent(contract: AgentContract, execute: Execute, schemas: Schemas = new Schemas()): AgentDefinition {
  const found = schemas.validate("contract", contract);
  for (const def of contract.data_types || []) {
    if (schemas.builtIn(def.name)) found.push(`data_types: ${def.name} is a built-in data type; give yours another name`);
    else schemas.declare(def);
  }
  for (const io of [...(contract.inputs || []), ...(contract.outputs || [])]) {
    if (!schemas.hasType(io.data_type)) found.push(`${io.name}: unknown data type ${JSON.stringify(io.data_type)}; declare it in data_types`);
  }
  if (found.length) throw new Error(`invalid agent contract ${JSON.stringify(contract.name)}: ${found.join("; ")}`);
  if (typeof execute !== "function") throw new Error(`agent ${contract.name}: execute must be a function`);
  return { contract, execute };
}

/** failure builds a failed result. */
function failure(contract: AgentContract, code: string, message: string, retryable = false): AgentResult {
  const error: { code: string; message: string; retryable?: boolean } = { code, message };
  if (retryable) error.retryable = true;
  return { success: false, agent: contract.name, capability: contract.capability, error };
}

/** ownerOf is the client that owns task ev's run or conversation (or sent it): its owner extension. */
const ownerOf = (ev: MeshEvent) => ev.ext.owner || undefined;

const maxDoneRemembered = 4096;
const cancelMemoryMs = 60_000;
const maxCancelsRemembered = 1024;

/**
 * run starts an instance of agent on nc and returns once it has announced
 * itself and is taking tasks. The mesh's streams, buckets and object store
 * must exist (`agentmesh up` or `agentmesh server --provision` makes them).
 */
export async function run(nc: NatsConnection, agent: AgentDefinition, opts: RunOptions = {}): Promise<RunningAgent> {
  const contract = agent.contract;
  if (!agentNamePattern.test(contract.name)) {
    throw new Error(`agent name ${JSON.stringify(contract.name)}: use 1 to 64 ASCII letters, digits, '-' or '_'`);
  }
  const cfg = {
    concurrency: opts.concurrency ?? 4,
    heartbeatMs: opts.heartbeatMs ?? 5000,
    ackWaitMs: opts.ackWaitMs ?? 30_000,
    maxDeliver: opts.maxDeliver ?? 5,
    backoffMs: opts.backoffMs && opts.backoffMs.length ? opts.backoffMs : [1000, 5000, 15_000],
    direct: opts.direct ?? true,
    handleSignals: opts.handleSignals ?? true,
    callGraceMs: opts.callGraceMs ?? 5000,
    maxCallDepth: opts.maxCallDepth ?? 4,
    maxCalls: opts.maxCalls ?? 16,
  };
  if (!Number.isInteger(cfg.concurrency) || cfg.concurrency < 1) {
    throw new Error(`concurrency ${cfg.concurrency}: give a whole number of tasks to run at once, 1 or more`);
  }
  const log = opts.log ?? ((m: string) => console.error(`[${contract.name}] ${m}`));
  const names = new Names(opts.prefix);
  const schemas = opts.schemas ?? new Schemas();
  for (const def of contract.data_types || []) schemas.declare(def);
  const checkParams = contract.params ? schemas.compile(contract.params) : undefined;
  const instanceId = opts.instanceId ?? randomBytes(6).toString("hex");
  const source = `/agentmesh/agents/${contract.name}/${instanceId}`;
  const key = `${contract.name}.${instanceId}`;
  const ttlSeconds = Math.max(1, Math.floor((3 * cfg.heartbeatMs) / 1000));
  const announcement: Announcement = {
    contract,
    instance: {
      id: instanceId,
      host: hostname(),
      pid: process.pid,
      started_at: new Date().toISOString(),
      ...(contract.version ? { version: contract.version } : {}),
      concurrency: cfg.concurrency,
    },
  };
  {
    const p = schemas.validate("announcement", announcement);
    if (p.length) throw new Error(`the announcement of ${contract.name} fails announcement.schema.json: ${p.join("; ")}`);
  }

  const js: JetStreamClient = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const agentsKV: KV = await new Kvm(nc).open(names.agentsBucket);
  // The step journal, bound the first time a task takes a step.
  let steps: Promise<KV> | undefined;
  const stepsKV = () =>
    (steps ??= new Kvm(nc).open(names.stepsBucket).catch((err) => {
      steps = undefined; // looked up again by the next step
      throw new RetryableError(`the step journal ${names.stepsBucket}: ${messageOf(err)}`);
    }));
  const files = new Files(nc, names, opts.maxCollection ?? defaultMaxCollection);
  const maxPayload = nc.info?.max_payload ?? 1 << 20;
  const creds = opts.credentials === null ? undefined : (opts.credentials ?? envCredentials());

  // One durable pull consumer per agent name, shared by all its instances.
  const consumerCfg = {
    durable_name: contract.name,
    description: `tasks of agent ${contract.name}, shared by its instances`,
    filter_subject: names.task(contract.name),
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(cfg.ackWaitMs),
    max_deliver: cfg.maxDeliver,
  };
  try {
    await jsm.consumers.add(names.tasksStream, consumerCfg);
  } catch {
    await jsm.consumers.update(names.tasksStream, contract.name, consumerCfg);
  }
  const consumer = await js.consumers.get(names.tasksStream, contract.name);

  // stopping is set by stop(); stopSignal aborts what still runs then.
  let stopping = false;
  const stopController = new AbortController();
  const stopSignal = stopController.signal;

  // --- registry --------------------------------------------------------------
  const announceEvent = () => encode(newEvent(EventTypes.agentAnnounced, source, announcement));
  async function announce(): Promise<void> {
    const m = announceEvent();
    nc.publish(names.announce(contract.name), m.data, { headers: m.headers });
    await js.publish(`$KV.${names.agentsBucket}.${key}`, JSON.stringify(announcement), { ttl: `${ttlSeconds}s` });
  }
  const subs: Subscription[] = [];
  subs.push(
    nc.subscribe(names.registryQuery, {
      callback: (err, m) => {
        if (err || !m.reply) return;
        const r = announceEvent();
        m.respond(r.data, { headers: r.headers });
      },
    }),
  );

  // --- cancel requests ---------------------------------------------------------
  const running = new Map<string, AbortController>();
  const cancelled = new Map<string, number>(); // task id -> when the request came, for tasks not started yet
  subs.push(
    nc.subscribe(names.control(contract.name), {
      callback: (err, m) => {
        if (err) return;
        let taskid = "";
        try {
          const j = JSON.parse(new TextDecoder().decode(m.data));
          taskid = typeof j?.taskid === "string" ? j.taskid : "";
          if (!taskid && j?.data && typeof j.data.taskid === "string") taskid = j.data.taskid;
        } catch {
          // a binary-mode CloudEvent carries the object as its body, parsed above; anything else is ignored
        }
        if (!taskid) return;
        const ac = running.get(taskid);
        if (!ac) {
          cancelled.set(taskid, Date.now());
          if (cancelled.size > maxCancelsRemembered) cancelled.delete(cancelled.keys().next().value!);
          return;
        }
        ac.abort(new MeshError(Codes.cancelled, `task ${taskid} for ${contract.name} was cancelled by request`));
        if (m.reply) m.respond(JSON.stringify({ taskid, instance: instanceId, cancelled: true }));
      },
    }),
  );
  const cancelPending = (id: string) => {
    const at = cancelled.get(id);
    if (at === undefined) return false;
    cancelled.delete(id);
    return Date.now() - at < cancelMemoryMs;
  };

  // --- slots -------------------------------------------------------------------
  // busy counts the tasks holding a slot; a task waiting on an agent call
  // gives its slot back.
  let busy = 0;
  let slotWaiters: Array<() => void> = [];
  const slotFreed = () => {
    const w = slotWaiters;
    slotWaiters = [];
    for (const f of w) f();
  };
  const waitSlot = () => new Promise<void>((resolve) => slotWaiters.push(resolve));

  // --- one task ----------------------------------------------------------------
  const validReplyTo = (s: string) => {
    const own = names.results(contract.name);
    return s.startsWith(own) && s.length > own.length && !/\s/.test(s) && s.split(".").every((t) => t !== "" && t !== "*" && t !== ">");
  };
  const correlation = (ev: MeshEvent) => {
    const out: Record<string, string> = {};
    for (const k of ["conversationid", "runid", "stepid", "traceparent"]) if (ev.ext[k]) out[k] = ev.ext[k];
    return out;
  };
  const wholeNumber = (s: string | undefined) => (s === undefined ? 0 : /^[0-9]+$/.test(s) ? Number(s) : NaN);

  /** checkEvent refuses a task event the runtime cannot run; it returns the reason. */
  function checkEvent(ev: MeshEvent, subject: string): string | undefined {
    if (ev.type !== EventTypes.taskRequested) return `event type ${JSON.stringify(ev.type)} on ${subject}: a task is ${EventTypes.taskRequested}`;
    if (!idPattern.test(ev.id)) return `task id (the event id) ${JSON.stringify(ev.id)} must be 1 to 128 letters, digits, '-', '_' or '='`;
    return undefined;
  }

  /**
   * runTask validates and executes one task; it returns its result (with
   * metrics) or throws a RetryableError.
   */
  async function runTask(ev: MeshEvent, attempt: number, direct: boolean, signature: string, working?: () => void, span?: TaskSpan): Promise<AgentResult> {
    const traceparent = span?.traceparent;
    const start = Date.now();
    const done = (res: AgentResult): AgentResult => {
      res.agent = contract.name;
      res.capability = res.capability || contract.capability;
      res.metrics = { ...(res.metrics || {}), duration_ms: Date.now() - start, attempt };
      return res;
    };
    const fail = (code: string, message: string) => done(failure(contract, code, message));
    const depth = wholeNumber(ev.ext.calldepth);
    const maxDepth = wholeNumber(ev.ext.maxcalldepth);
    if (Number.isNaN(depth) || Number.isNaN(maxDepth)) {
      return fail(Codes.malformedEvent, `task ${ev.id}: calldepth ${JSON.stringify(ev.ext.calldepth)} and maxcalldepth ${JSON.stringify(ev.ext.maxcalldepth)} must be whole numbers`);
    }
    if (maxDepth > 0 && depth > maxDepth) {
      return fail(Codes.callDepth, `task ${ev.id} for ${contract.name} is ${depth} calls deep; its chain allows ${maxDepth}`);
    }
    const data = ev.data === undefined ? {} : ev.data;
    if (typeof data !== "object" || data === null || Array.isArray(data)) {
      return fail(Codes.malformedEvent, `task ${ev.id}: data must be a JSON object (task.schema.json)`);
    }
    let p = schemas.validate("task", data);
    if (p.length) return fail(Codes.malformedEvent, `task ${ev.id}: data fails task.schema.json: ${p.join("; ")}`);
    const req = data as TaskRequest;
    const inputs = (req.inputs || {}) as Record<string, TypedValue>;
    p = validateInputs(inputs);
    if (p.length) return fail(Codes.invalidInput, `task ${ev.id} for ${contract.name}: ${p.join("; ")}`);
    const params = (req.params || {}) as Record<string, unknown>;
    if (checkParams && !checkParams(params)) {
      return fail(Codes.invalidParams, `task ${ev.id} for ${contract.name}: params ${JSON.stringify(params)}: params of ${contract.name}: ${problems(checkParams).join("; ")}`);
    }
    // The deadline extension wins; else the task's timeout_ms; else the contract's.
    let deadline: number | undefined;
    if (ev.ext.deadline) {
      deadline = Date.parse(ev.ext.deadline);
      if (Number.isNaN(deadline)) return fail(Codes.malformedEvent, `task ${ev.id}: deadline ${JSON.stringify(ev.ext.deadline)} is not an RFC 3339 time`);
    } else if (req.timeout_ms && req.timeout_ms > 0) {
      deadline = start + req.timeout_ms;
    } else if (contract.timeout_ms && contract.timeout_ms > 0) {
      deadline = start + contract.timeout_ms;
    }
    if (deadline !== undefined && Date.now() >= deadline) {
      return fail(Codes.timeout, `task ${ev.id} for ${contract.name} was past its deadline ${new Date(deadline).toISOString()} before it started`);
    }
    if (cancelPending(ev.id)) return fail(Codes.cancelled, `task ${ev.id} for ${contract.name} was cancelled by request before it started`);

    const ac = new AbortController();
    running.set(ev.id, ac);
    const timer =
      deadline !== undefined
        ? setTimeout(() => ac.abort(new MeshError(Codes.timeout, `task ${ev.id} for ${contract.name} did not finish within deadline ${new Date(deadline!).toISOString()}`)), deadline - Date.now())
        : undefined;
    const stopListener = () => ac.abort(new MeshError(Codes.cancelled, `task ${ev.id} for ${contract.name}: the agent is stopping`));
    const ticker = working ? setInterval(working, Math.max(100, Math.floor(cfg.ackWaitMs / 3))) : undefined;
    const spent = { prompt: 0, completion: 0, cost: 0, model_ms: 0 };
    let calls = 0;
    const stepSeq = new Map<string, number>();
    const ctx: TaskContext = {
      id: ev.id,
      event: ev as MeshEvent<TaskRequest>,
      inputs,
      params,
      instruction: req.instruction || "",
      attempt,
      deadline: deadline !== undefined ? new Date(deadline) : undefined,
      signal: ac.signal,
      direct,
      traceparent: ev.ext.traceparent,
      value: <T>(name: string) => inputs[name]?.value as T | undefined,
      fileIDs: async (name: string) => {
        const v = inputs[name];
        if (!v) return [];
        if (v.data_type !== "FILE_IDS") throw new MeshError(Codes.invalidInput, `input ${JSON.stringify(name)} is ${v.data_type}, not FILE_IDS`);
        return files.ids(v.value as FileCollection);
      },
      files: files.forOwner(ownerOf(ev)), // a client's task: its files in the client's bucket

      progress: (message: string, percent?: number) => {
        const id = [ev.ext.conversationid, ev.ext.runid].find((x) => x && idPattern.test(x)) || ev.id;
        const body: Record<string, unknown> = { taskid: ev.id, agent: contract.name, message };
        if (percent !== undefined) body.percent = percent;
        const m = encode(newEvent(EventTypes.taskProgress, source, body, { ...correlation(ev), taskid: ev.id }));
        // On the owner's subject when a client owns the task's run or conversation (or sent it).
        nc.publish(names.events(id, "task", ownerOf(ev)), m.data, { headers: m.headers });
      },
      call: async (target: CallTarget, task: TaskRequest) => {
        if (++calls > cfg.maxCalls) {
          throw new MeshError(Codes.callFanout, `task ${ev.id} of ${contract.name} made more than ${cfg.maxCalls} agent calls`);
        }
        const res = await callAgent(ev, calls, signature, target, task, deadline, depth, maxDepth, ac.signal, traceparent);
        const m = res.metrics || {};
        spent.prompt += m.tokens?.prompt || 0;
        spent.completion += m.tokens?.completion || 0;
        spent.cost += m.cost || 0;
        spent.model_ms += m.model_ms || 0;
        return res;
      },
      step: async <T>(name: string, fn: (key: string) => Promise<T> | T): Promise<T> => {
        if (!stepNamePattern.test(name)) {
          throw new MeshError(Codes.invalidInput, `step name ${JSON.stringify(name)}: use 1 to 64 letters, digits, '-' or '_'`);
        }
        const n = stepSeq.get(name) ?? 0;
        stepSeq.set(name, n + 1);
        const key = `${ev.id}.${name}.${n}`;
        const kv = await stepsKV();
        const recorded = async () => {
          const e = await kv.get(key);
          return e && e.operation === "PUT" ? (JSON.parse(e.string()) as T) : undefined;
        };
        if (attempt > 1) {
          // A first delivery finds nothing recorded, and skips the read.
          const got = await recorded();
          if (got !== undefined) return got;
        }
        const value = await fn(key);
        const data = JSON.stringify(value ?? null);
        const size = Buffer.byteLength(data);
        if (size > maxStepBytes) {
          throw new MeshError(Codes.stepTooLarge, `${contract.name}: task ${ev.id}: the result of step ${key} is ${size} bytes, over the step journal's limit of ${maxStepBytes}: return less from the step (put large content in files and return their ids)`);
        }
        try {
          await kv.create(key, data);
        } catch (err) {
          const first = await recorded(); // another delivery recorded it first: its result stands
          if (first === undefined) throw new RetryableError(`recording step ${key} in ${names.stepsBucket}: ${messageOf(err)}`);
          return first;
        }
        return value;
      },
    };
    stopSignal.addEventListener("abort", stopListener, { once: true });
    try {
      const aborted = new Promise<never>((_, reject) => ac.signal.addEventListener("abort", () => reject(ac.signal.reason), { once: true }));
      const out = await Promise.race([Promise.resolve().then(() => (span ? span.within(() => agent.execute(ctx)) : agent.execute(ctx))), aborted]);
      return done(buildResult(ev, out || {}, spent));
    } catch (err) {
      if (err instanceof RetryableError) throw err;
      if (err instanceof MeshError) {
        if (err.retryable) throw new RetryableError(err.message);
        return done(failure(contract, err.code, err.message));
      }
      return done(failure(contract, Codes.agentError, `${contract.name}: ${messageOf(err)}`));
    } finally {
      clearTimeout(timer);
      clearInterval(ticker);
      stopSignal.removeEventListener("abort", stopListener);
      running.delete(ev.id);
    }
  }

  function validateInputs(inputs: Record<string, TypedValue>): string[] {
    const out: string[] = [];
    for (const decl of contract.inputs || []) {
      const v = inputs[decl.name];
      if (!v) {
        if (decl.required) out.push(`input ${JSON.stringify(decl.name)} (${decl.data_type}) is required but missing`);
        continue;
      }
      if (v.data_type !== decl.data_type) {
        out.push(`input ${JSON.stringify(decl.name)} has data type ${JSON.stringify(v.data_type)}; ${contract.name} declares it ${decl.data_type}`);
        continue;
      }
      const want = decl.content_type_hint || "";
      const have = v.content_type_hint || "";
      if (want && have && want !== have && want !== "mixed") {
        out.push(`input ${JSON.stringify(decl.name)} (${decl.data_type}) holds ${have}; ${contract.name} reads ${want}`);
      }
      for (const q of schemas.validate(`types/${decl.data_type}`, v.value)) out.push(`input ${JSON.stringify(decl.name)} (${decl.data_type}) value ${q}`);
    }
    for (const name of Object.keys(inputs)) {
      if (!(contract.inputs || []).some((d) => d.name === name)) {
        out.push(`input ${JSON.stringify(name)} is not declared by ${contract.name} (it reads: ${(contract.inputs || []).map((d) => d.name).join(", ") || "nothing"})`);
      }
    }
    return out;
  }

  /** buildResult types execute's outputs by the contract and checks them against their schemas. */
  function buildResult(ev: MeshEvent, out: Outcome, spent: { prompt: number; completion: number; cost: number; model_ms: number }): AgentResult {
    const now = new Date().toISOString();
    const outputs: Record<string, TypedValue> = {};
    const bad: string[] = [];
    for (const [name, value] of Object.entries(out.outputs || {})) {
      if (value === undefined) continue;
      const decl = (contract.outputs || []).find((o) => o.name === name);
      if (!decl) {
        bad.push(`output ${JSON.stringify(name)} is not declared (it declares: ${(contract.outputs || []).map((o) => o.name).join(", ") || "nothing"})`);
        continue;
      }
      for (const q of schemas.validate(`types/${decl.data_type}`, value)) bad.push(`output ${JSON.stringify(name)} (${decl.data_type}) value ${q}`);
      const tv: TypedValue = { data_type: decl.data_type, value, source: contract.name, produced_at: now };
      if (decl.content_type_hint) tv.content_type_hint = decl.content_type_hint;
      outputs[name] = tv;
    }
    if (bad.length) return failure(contract, Codes.agentError, `task ${ev.id}: ${contract.name} produced bad outputs: ${bad.join("; ")}`);
    const res: AgentResult = { success: true, agent: contract.name, capability: contract.capability, outputs };
    if (out.summary) res.summary = out.summary;
    const m = out.metrics || {};
    const prompt = (m.tokens?.prompt || 0) + spent.prompt;
    const completion = (m.tokens?.completion || 0) + spent.completion;
    const metrics: Record<string, unknown> = {};
    if (prompt || completion) metrics.tokens = { prompt, completion };
    if ((m.cost || 0) + spent.cost) metrics.cost = (m.cost || 0) + spent.cost;
    if ((m.model_ms || 0) + spent.model_ms) metrics.model_ms = (m.model_ms || 0) + spent.model_ms;
    if (Object.keys(metrics).length) res.metrics = metrics as AgentResult["metrics"];
    return res;
  }

  /** fit keeps a result within one message: a failure's message is cut, a success too large becomes too_large. */
  function fit(res: AgentResult, ev: MeshEvent): AgentResult {
    const size = new TextEncoder().encode(JSON.stringify(res)).length;
    const room = maxPayload - 4096; // headers
    if (size <= room) return res;
    if (!res.success && res.error) {
      const cut = 16 << 10;
      const msg = res.error.message;
      res.error.message = `${msg.slice(0, cut)}... (${msg.length - cut} more bytes left out)`;
      return res;
    }
    const sizes = Object.entries(res.outputs || {}).map(([n, v]) => `${n} ${JSON.stringify(v).length} bytes`);
    return { ...failure(contract, Codes.tooLarge, `task ${ev.id}: the result of ${contract.name} is ${size} bytes, over the ${maxPayload}-byte message limit (outputs: ${sizes.join(", ")}); spill large collections with files.collection`), metrics: res.metrics };
  }

  function resultMsgID(taskID: string, subject: string): string {
    const rest = subject.slice(names.results(contract.name).length);
    return rest.startsWith("client.") || rest.startsWith("agent.") ? `result-${taskID}@${rest}` : `result-${taskID}`;
  }

  async function publishResult(ev: MeshEvent, res: AgentResult): Promise<void> {
    const subject = ev.ext.replyto && validReplyTo(ev.ext.replyto) ? ev.ext.replyto : names.result(contract.name, ev.id);
    const type = res.success ? EventTypes.taskCompleted : EventTypes.taskFailed;
    const m = encode(newEvent(type, source, fit(res, ev), { ...correlation(ev), taskid: ev.id }));
    await js.publish(subject, m.data, { headers: m.headers, msgID: resultMsgID(ev.id, subject) });
  }

  // deadLetter publishes the task message, headers and body, to
  // mesh.dead.<agent> with the code, the reason and where the task was
  // stored (its publisher's acknowledgement names the stream and sequence),
  // once per stored task (Nats-Msg-Id dead-<stream>-<sequence>). It
  // returns the dead letter's headers.
  async function deadLetter(msg: JsMsg, code: string, reason: string, attempt: number): Promise<MsgHdrs> {
    const h = newHeaders();
    if (msg.headers) for (const k of msg.headers.keys()) if (!k.startsWith("Nats-")) h.set(k, msg.headers.get(k));
    h.set(deadHeaders.reason, reason.replace(/\r/g, " ").replace(/\n/g, "; ").slice(0, 1000));
    h.set(deadHeaders.agent, contract.name);
    h.set(deadHeaders.instance, instanceId);
    h.set(deadHeaders.deliveries, String(attempt));
    h.set(deadHeaders.code, code);
    h.set(deadHeaders.stream, msg.info.stream);
    h.set(deadHeaders.sequence, String(msg.info.streamSequence));
    await js.publish(names.dead(contract.name), msg.data, { headers: h, msgID: `dead-${msg.info.stream}-${msg.info.streamSequence}` });
    return h;
  }

  // Tasks answered by this instance, by id and replyto (bounded).
  const answered = new Set<string>();
  const remember = (k: string) => {
    answered.add(k);
    if (answered.size > maxDoneRemembered) answered.delete(answered.values().next().value!);
  };

  async function handle(msg: JsMsg): Promise<void> {
    const received = Date.now();
    const attempt = msg.info.deliveryCount;
    let ev: MeshEvent;
    try {
      ev = decode(msg);
      const why = checkEvent(ev, msg.subject);
      if (why) throw new Error(why);
      if (ev.ext.replyto && !validReplyTo(ev.ext.replyto)) {
        throw new Error(`replyto ${JSON.stringify(ev.ext.replyto)} is not one of this agent's result subjects: name a subject under ${names.results(contract.name)}> (or none)`);
      }
      if (ev.ext.owner && !idPattern.test(ev.ext.owner)) {
        throw new Error(`owner extension (a client name) ${JSON.stringify(ev.ext.owner)}: use 1 to 128 letters, digits, '-', '_' or '='`);
      }
    } catch (err) {
      return rejectMalformed(msg, messageOf(err), attempt);
    }
    if (creds && !(await checkSender(msg, ev, attempt))) return;
    const span = startTaskSpan(contract.name, instanceId, ev, msg.subject, received, attempt);
    const doneKey = `${ev.id} ${ev.ext.replyto || ""}`;
    if (answered.has(doneKey)) {
      msg.ack(); // answered already: the redelivery only needs its ack
      span.end("duplicate");
      return;
    }
    let res: AgentResult;
    let outcome = "";
    try {
      res = await runTask(ev, attempt, false, msg.headers?.get(headerSignature) || "", () => msg.working(), span);
    } catch (err) {
      if (attempt < cfg.maxDeliver) {
        const delay = cfg.backoffMs[Math.min(attempt - 1, cfg.backoffMs.length - 1)];
        log(`task ${ev.id} will be retried in ${delay} ms (delivery ${attempt} of ${cfg.maxDeliver}): ${messageOf(err)}`);
        msg.nak(delay);
        span.end("retry", failure(contract, Codes.unavailable, messageOf(err), true));
        return;
      }
      const reason = `gave up after ${attempt} deliveries: ${messageOf(err)}`;
      await deadLetter(msg, Codes.retriesExhausted, reason, attempt);
      res = { ...failure(contract, Codes.retriesExhausted, reason), metrics: { duration_ms: 0, attempt } };
      outcome = "dead_letter";
    }
    try {
      await publishResult(ev, res);
    } catch (err) {
      if (attempt < cfg.maxDeliver) {
        log(`publishing the result of ${ev.id}: ${messageOf(err)}`);
        msg.nak(cfg.backoffMs[Math.min(attempt - 1, cfg.backoffMs.length - 1)]);
        span.end("retry", failure(contract, Codes.unavailable, `publishing the result: ${messageOf(err)}`, true));
        return;
      }
      const reason = `retries_exhausted: gave up after ${attempt} deliveries: publishing the result failed: ${messageOf(err)}`;
      await deadLetter(msg, Codes.retriesExhausted, reason, attempt).catch((e) => log(`dead-lettering ${ev.id}: ${messageOf(e)}`));
      msg.term(reason);
      span.end("dead_letter", failure(contract, Codes.retriesExhausted, reason));
      return;
    }
    remember(doneKey);
    msg.ack();
    span.end(outcome || (res.success ? "completed" : "failed"), res);
  }

  // senderSpace is where an identity's tasks may be answered: its own
  // result subjects for a client or an agent, any of this agent's for the
  // orchestrator and admin ("").
  const senderSpace = (id: Identity) =>
    id.role === "client" ? `${names.results(contract.name)}client.${id.name}.` : id.role === "agent" ? `${names.results(contract.name)}agent.${id.name}.` : "";

  // checkSender makes sure, on a secure mesh, that a task answers only into
  // the result subjects of the identity that signed it. A signed task
  // naming another's subjects is answered forbidden on the signer's own; an
  // unsigned one, or one whose signature does not check, has no sender to
  // tell and is refused on mesh.dead.<agent>.refused (refuseUnanswered).
  // It returns whether the task may run.
  async function checkSender(msg: JsMsg, ev: MeshEvent, attempt: number): Promise<boolean> {
    let who: Identity;
    try {
      who = creds!.sender(msg.subject, msg.headers, msg.data);
    } catch (err) {
      await refuse(msg, ev.id, Codes.forbidden, `${Codes.forbidden}: ${messageOf(err)}`, attempt);
      return false;
    }
    const space = senderSpace(who);
    const replyto = ev.ext.replyto || "";
    let reason: string;
    if (who.role === "client" && ev.ext.owner && ev.ext.owner !== who.name) {
      // A client's task is its own: its progress goes on no other client's subjects.
      reason = `task ${ev.id} from ${userOf(who)} names owner ${JSON.stringify(ev.ext.owner)}: a client may only name itself (${JSON.stringify(who.name)}) or leave the owner out`;
    } else if (space === "" || (replyto.startsWith(space) && replyto.length > space.length)) {
      if (who.role === "client") ev.ext.owner = who.name;
      return true;
    } else reason = `task ${ev.id} from ${userOf(who)} names replyto ${JSON.stringify(replyto || names.result(contract.name, ev.id))}: ${userOf(who)} may only name a subject under ${space}> (the default ${names.result(contract.name, "<taskid>")} is not its)`;
    log(`task refused: ${reason}`);
    const on = space + ev.id;
    const res = { ...failure(contract, Codes.forbidden, reason), metrics: { duration_ms: 0, attempt } };
    const enc = encode(newEvent(EventTypes.taskFailed, source, res, { ...correlation(ev), taskid: ev.id }));
    try {
      // Its own message id: the refusal must not take the place of the
      // result of another requester's task of the same id.
      await js.publish(on, enc.data, { headers: enc.headers, msgID: `refused-${ev.id}@${on.slice(names.results(contract.name).length)}` });
      msg.term(Codes.forbidden);
    } catch (err) {
      log(`answering a refused task: ${messageOf(err)}`);
      await refuse(msg, ev.id, Codes.forbidden, `${Codes.forbidden}: ${reason}`, attempt);
    }
    return false;
  }

  // refuse ends a task refused with code that no result subject can
  // answer: refuseUnanswered, then terminated; when that fails, it comes
  // back after the first back-off, since its sender was told nothing.
  async function refuse(msg: JsMsg, id: string, code: string, reason: string, attempt: number): Promise<void> {
    log(`task refused: ${reason}`);
    try {
      await refuseUnanswered(msg, id, code, reason, attempt);
    } catch (err) {
      log(`refusing a task: ${messageOf(err)}`);
      msg.nak(cfg.backoffMs[0]);
      return;
    }
    msg.term(code);
  }

  // refuseUnanswered dead-letters a task refused with code that can be
  // answered on no result subject (no usable id, or, on a secure mesh, a
  // sender that cannot be told). On a secure mesh, where only the
  // orchestrator and admin read mesh.dead.<agent>, it also posts the
  // refusal's notice on mesh.dead.<agent>.refused, which every identity may
  // read: the dead letter's code, reason, agent, stream and sequence, the
  // task id in ce-id when it is a subject token, no data and no other
  // header, with Nats-Msg-Id refused-<stream>-<sequence> (bus.RefusalNotice).
  async function refuseUnanswered(msg: JsMsg, id: string, code: string, reason: string, attempt: number): Promise<void> {
    const dead = await deadLetter(msg, code, reason, attempt);
    if (!creds) return;
    const h = newHeaders();
    for (const k of [deadHeaders.code, deadHeaders.reason, deadHeaders.agent, deadHeaders.stream, deadHeaders.sequence]) {
      const v = dead.get(k);
      if (v) h.set(k, v);
    }
    if (idPattern.test(id)) h.set("ce-id", id);
    const subject = names.deadRefused(contract.name);
    try {
      await js.publish(subject, new Uint8Array(), { headers: h, msgID: `refused-${msg.info.stream}-${msg.info.streamSequence}` });
    } catch (err) {
      throw new Error(`posting the refusal on ${subject}: ${messageOf(err)}`);
    }
  }

  // senderReply returns where a malformed task may be answered on a secure
  // mesh: replyto when it lies in the signer's result subjects (or the
  // signer is the orchestrator or admin), else the signer's own with the
  // task's id; known is false when the sender cannot be told. On a plain
  // mesh it returns replyto.
  function senderReply(msg: JsMsg, id: string, replyto: string): { to: string; known: boolean } {
    if (!creds) return { to: replyto, known: true };
    let who: Identity;
    try {
      who = creds.sender(msg.subject, msg.headers, msg.data);
    } catch {
      return { to: "", known: false };
    }
    const space = senderSpace(who);
    if (space === "" || replyto.startsWith(space)) return { to: replyto, known: true };
    if (idPattern.test(id)) return { to: space + id, known: true };
    return { to: "", known: false };
  }

  // rejectMalformed answers a message that is not a readable task: with a
  // failed result where an id or replyto its sender may be answered on can
  // be read, else by refusing it (refuseUnanswered).
  async function rejectMalformed(msg: JsMsg, reason: string, attempt: number): Promise<void> {
    log(`malformed task on ${msg.subject}: ${reason}`);
    const { id } = rawAttrs(msg);
    let { replyto } = rawAttrs(msg);
    let idOK = idPattern.test(id);
    if (!validReplyTo(replyto)) replyto = "";
    const sender = senderReply(msg, id, replyto);
    if (!sender.known) {
      replyto = "";
      idOK = false; // nowhere its sender may be answered
    } else {
      replyto = sender.to;
    }
    if (idOK || replyto) {
      const ev = { id: idOK ? id : "unknown", ext: replyto ? { replyto } : {} } as MeshEvent;
      try {
        await publishResult(ev, { ...failure(contract, Codes.malformedEvent, `task event on ${msg.subject}: ${reason}`), metrics: { duration_ms: 0, attempt } });
        msg.term("malformed event");
        return;
      } catch (err) {
        log(`answering a malformed task: ${messageOf(err)}`);
      }
    }
    await refuse(msg, id, Codes.malformedEvent, `malformed event: ${reason}`, attempt);
  }

  // --- agent-to-agent calls --------------------------------------------------------
  async function liveAgents(): Promise<Map<string, AgentContract>> {
    const out = new Map<string, AgentContract>();
    const keys = await agentsKV.keys();
    for await (const k of keys) {
      const e = await agentsKV.get(k);
      if (!e || e.operation !== "PUT") continue;
      try {
        const a = e.json<Announcement>();
        out.set(a.contract.name, a.contract);
      } catch {
        // an announcement that does not decode is no callee
      }
    }
    return out;
  }

  async function pickCallee(target: CallTarget, signal: AbortSignal): Promise<string> {
    if (typeof target === "string") {
      if (!agentNamePattern.test(target)) throw new MeshError(Codes.invalidInput, `call target ${JSON.stringify(target)} is not an agent name`);
      const until = Date.now() + cfg.callGraceMs;
      for (;;) {
        const live = await liveAgents();
        if (live.has(target)) return target;
        if (Date.now() >= until || signal.aborted) {
          throw new MeshError(Codes.unknownAgent, `agent ${target} has no live instance (waited ${cfg.callGraceMs} ms); live agents: ${[...live.keys()].sort().join(", ") || "none"}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const live = await liveAgents();
    const fits = [...live.values()]
      .filter((c) => (!target.capability || c.capability === target.capability) && (!target.dataType || (c.outputs || []).some((o) => o.data_type === target.dataType)))
      .map((c) => c.name)
      .sort((a, b) => Number(a === contract.name) - Number(b === contract.name) || a.localeCompare(b));
    if (!fits.length) throw new MeshError(Codes.unavailable, `no live agent offers capability ${target.capability || "(any)"} with an output of ${target.dataType || "(any type)"}`);
    return fits[0];
  }

  async function callAgent(
    caller: MeshEvent,
    n: number,
    signature: string,
    target: CallTarget,
    task: TaskRequest,
    deadline: number | undefined,
    depth: number,
    maxDepth: number,
    signal: AbortSignal,
    traceparent: string | undefined,
  ): Promise<AgentResult> {
    const limit = maxDepth > 0 ? maxDepth : cfg.maxCallDepth;
    if (depth + 1 > limit) throw new MeshError(Codes.callDepth, `task ${caller.id} of ${contract.name} is ${depth} calls deep; a call would pass the chain's limit of ${limit}`);
    const callee = await pickCallee(target, signal);
    // On a secure mesh the id is tagged with the caller's task signature,
    // which only this agent reads: no one who saw the caller's id can take
    // the call's id first. Redeliveries carry the same signature.
    let id = taskTag(`${caller.id}-c${n}`, creds ? signature : "");
    if (id.length > 128) id = `call-${createHash("sha256").update(id).digest("hex").slice(0, 32)}`;
    const replyto = names.agentResult(callee, contract.name, id);
    let calleeDeadline: number | undefined;
    if (deadline !== undefined) {
      const left = deadline - Date.now();
      calleeDeadline = deadline - Math.min(1000, Math.floor(left / 10));
    }
    const ext: Record<string, string | undefined> = {
      replyto,
      runid: caller.ext.runid,
      conversationid: caller.ext.conversationid,
      owner: caller.ext.owner,
      // the task's span when one records (the callee's is its child), else the task's own
      traceparent: traceparent ?? caller.ext.traceparent,
      calldepth: String(depth + 1),
      maxcalldepth: String(limit),
      deadline: calleeDeadline !== undefined ? new Date(calleeDeadline).toISOString() : undefined,
    };
    const oc = await openReader(nc, names.resultsStream, replyto);
    const m = encode(newEvent(EventTypes.taskRequested, source, task, ext, id));
    creds?.sign(names.task(callee), m.headers, m.data);
    await js.publish(names.task(callee), m.data, { headers: m.headers, msgID: id });
    // While it waits the caller gives its slot back, so the callee may run here.
    busy--;
    slotFreed();
    try {
      const wait = deadline !== undefined ? Math.max(1, deadline - Date.now()) : 3_600_000;
      const got = oc.next(wait);
      let msg: JsMsg | null = null;
      const stopAt = Date.now() + wait;
      const aborted = new Promise<never>((_, reject) => {
        if (signal.aborted) reject(signal.reason);
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
      msg = await Promise.race([got, aborted]);
      while (!msg && Date.now() < stopAt) msg = await Promise.race([oc.next(stopAt - Date.now()), aborted]);
      if (!msg) throw new MeshError(Codes.timeout, `${contract.name} calling ${callee} (task ${id}): no result by the deadline`);
      const rev = decode(msg);
      const res = rev.data as AgentResult;
      if (!res.success) {
        const code = res.error?.code || Codes.agentError;
        throw new MeshError(code, `${contract.name} calling ${callee} (task ${id}): ${code}: ${res.error?.message || "failed"}`);
      }
      return res;
    } finally {
      busy++;
      await oc.close();
    }
  }

  // --- the direct path ------------------------------------------------------------
  let service: Service | undefined;
  let directQueue: Promise<void> = Promise.resolve();
  let endpointStats: { countError(err: Error): void } | undefined;
  if (cfg.direct) {
    const metadata: Record<string, string> = { instance: instanceId, capability: contract.capability };
    const semver = contract.version && /^\d+\.\d+\.\d+/.test(contract.version) ? contract.version : "0.0.0";
    service = await new Svcm(nc as never).add({ name: contract.name, version: semver, description: contract.description, metadata, queue: "q" });
    service.addEndpoint("call", {
      subject: names.call(contract.name),
      // One direct call at a time, as the Go runtime answers them; calls
      // queued when the agent stops are answered unavailable.
      handler: (err, m) => {
        if (err) return;
        directQueue = directQueue.then(() => direct(m)).catch((e) => log(`direct call: ${messageOf(e)}`));
      },
    });
    // @nats-io/services counts an error only when a handler throws at once;
    // a failed reply is counted here, as the Go runtime's micro counts it.
    const internal = service as unknown as { handlers?: Array<{ name: string; stats?: { countError(err: Error): void } }> };
    endpointStats = internal.handlers?.find((h) => h.name === "call")?.stats;
  }

  async function direct(m: ServiceMsg): Promise<void> {
    const received = Date.now();
    let ev: MeshEvent;
    let res: AgentResult;
    try {
      ev = decode(m);
      const why = checkEvent(ev, m.subject);
      if (why) throw new Error(why);
    } catch (err) {
      const { id } = rawAttrs(m);
      ev = { id: idPattern.test(id) ? id : "unknown", ext: {} } as MeshEvent;
      return reply(m, ev, { ...failure(contract, Codes.malformedEvent, `task event on ${m.subject}: ${messageOf(err)}`), metrics: { duration_ms: 0, attempt: 1 } });
    }
    if (stopping) {
      return reply(m, ev, { ...failure(contract, Codes.unavailable, `${contract.name} instance ${instanceId} is stopping: call again`, true), metrics: { duration_ms: 0, attempt: 1 } });
    }
    if (creds) {
      // Whose the call is, as checkSender settles it for a queued task: a
      // client's call is its own; one no identity of the mesh signed (sent
      // unsigned, or a tenant's through an import) is no one's, whatever
      // owner it names, so it reaches only the shared file store.
      let who: Identity | undefined;
      try {
        who = creds.sender(m.subject, m.headers, m.data);
      } catch {
        delete ev.ext.owner;
      }
      if (who?.role === "client") {
        if (ev.ext.owner && ev.ext.owner !== who.name) {
          const reason = `task ${ev.id} from ${userOf(who)} names owner ${JSON.stringify(ev.ext.owner)}: a client may only name itself (${JSON.stringify(who.name)}) or leave the owner out`;
          return reply(m, ev, { ...failure(contract, Codes.forbidden, reason), metrics: { duration_ms: 0, attempt: 1 } });
        }
        ev.ext.owner = who.name;
      }
    }
    const span = startTaskSpan(contract.name, instanceId, ev, m.subject, received, 1);
    try {
      res = await runTask(ev, 1, true, m.headers?.get(headerSignature) || "", undefined, span);
    } catch (err) {
      res = { ...failure(contract, Codes.unavailable, messageOf(err), true), metrics: { duration_ms: 0, attempt: 1 } };
    }
    span.end(res.success ? "completed" : "failed", res);
    return reply(m, ev, res);
  }

  function reply(m: ServiceMsg, ev: MeshEvent, res: AgentResult): void {
    const type = res.success ? EventTypes.taskCompleted : EventTypes.taskFailed;
    const enc = encode(newEvent(type, source, fit(res, ev), { ...correlation(ev), taskid: ev.id }));
    if (res.success || !res.error) {
      m.respond(enc.data, { headers: enc.headers });
      return;
    }
    endpointStats?.countError(new Error(`${res.error.code}: ${res.error.message}`));
    m.respondError(serviceErrorCode(res.error.code), `${res.error.code}: ${res.error.message}`.replace(/[\r\n]+/g, "; ").slice(0, 4000), enc.data, { headers: enc.headers });
  }

  // --- main loop ---------------------------------------------------------------------
  const inflight = new Set<Promise<void>>();

  async function consume(): Promise<void> {
    let failures = 0;
    while (!stopping) {
      if (busy >= cfg.concurrency) {
        await waitSlot();
        continue;
      }
      try {
        const batch = await consumer.fetch({ max_messages: cfg.concurrency - busy, expires: 1000 });
        for await (const m of batch) {
          busy++;
          const p: Promise<void> = handle(m)
            .catch((err) => log(`handling a task: ${messageOf(err)}`))
            .finally(() => {
              busy--;
              inflight.delete(p);
              slotFreed();
            });
          inflight.add(p);
        }
        failures = 0;
      } catch (err) {
        if (stopping) break;
        failures++;
        log(`fetching tasks: ${messageOf(err)}`);
        await new Promise((r) => setTimeout(r, Math.min(failures * 100, 2000)));
      }
    }
    await Promise.allSettled([...inflight]);
  }

  await announce();
  const heartbeat = setInterval(() => announce().catch((err) => log(`heartbeat: ${messageOf(err)}`)), cfg.heartbeatMs);
  const loop = consume();

  let stopped: Promise<void> | undefined;
  let resolveStopped!: () => void;
  const stoppedPromise = new Promise<void>((r) => (resolveStopped = r));
  const onSignal = (sig: string) => {
    log(`${sig}: draining`);
    stop()
      .then(() => nc.drain())
      .catch((err) => log(`stopping: ${messageOf(err)}`));
  };
  const onTerm = () => onSignal("SIGTERM");
  const onInt = () => onSignal("SIGINT");
  if (cfg.handleSignals) {
    process.once("SIGTERM", onTerm);
    process.once("SIGINT", onInt);
  }

  function stop(): Promise<void> {
    if (stopped) return stopped;
    stopping = true;
    stopped = (async () => {
      if (service) await service.stop().catch(() => undefined); // the endpoint first: queued calls go to other instances
      slotFreed();
      await loop;
      clearInterval(heartbeat);
      stopController.abort();
      for (const s of subs) {
        try {
          s.unsubscribe();
        } catch {
          // the connection is gone already: nothing to unsubscribe from
        }
      }
      process.off("SIGTERM", onTerm);
      process.off("SIGINT", onInt);
      if (!nc.isClosed()) {
        try {
          const m = encode(newEvent(EventTypes.agentDeparted, source, { agent: contract.name, instance: instanceId }));
          nc.publish(names.depart(contract.name), m.data, { headers: m.headers });
          await agentsKV.delete(key);
          await nc.flush();
        } catch (err) {
          log(`departing: ${messageOf(err)}`);
        }
      }
      resolveStopped();
    })();
    return stopped;
  }

  return { instanceId, announcement, stop, stopped: stoppedPromise };
}
