// agent.js: NodeWordCount, an agentmesh agent written in Node.js against the
// wire contract of docs/protocol.md. It counts the words of documents (read
// from the mesh_files object store by file id) or of a text.
//
// It announces its contract (event and registry key with a TTL), heartbeats,
// takes its tasks from the durable pull consumer named after it on
// MESH_TASKS, validates every task against the project's JSON Schemas and its
// own contract, publishes the result to the task's replyto (else
// mesh.result.<agent>.<taskid>) and only then acks. A replyto outside
// mesh.result.<agent>. is refused: results go nowhere else. On a secure mesh
// (NATS_CREDS) it checks who signed each task (signed.js): an unsigned or
// forged task is refused with code forbidden on mesh.dead.<agent>.refused,
// and a replyto outside the signer's result subjects is answered forbidden
// on the signer's own. SIGTERM drains: no new tasks,
// running ones finish, the departure is announced and the key deleted.
//
//   NATS_URL=nats://127.0.0.1:4222 node agent.js
//   NATS_CREDS=agent.creds NATS_CA=ca.pem node agent.js    (a secure mesh)

import { hostname } from "node:os";
import { randomBytes } from "node:crypto";

import { connect, headers, nanos } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, AckPolicy } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";

import { names, types, toMsg, fromMsg, rawAttrs, newEvent, tokenRE, Schemas, connectOptions } from "./mesh.js";
import { traceTask, shutdownTracing } from "./tracing.js";
import { Senders, senderSpace } from "./signed.js";

const contract = {
  name: process.env.AGENT_NAME || "NodeWordCount",
  version: "1.0.0",
  capability: "ANALYSIS",
  description:
    "Counts the words of documents or of a text and names the most frequent words (written in Node.js). " +
    "With neither, it counts the words of the instruction.",
  inputs: [
    { name: "documents", data_type: "FILE_IDS", content_type_hint: "documents", description: "documents whose words to count" },
    { name: "text", data_type: "TEXT", description: "a text whose words to count" },
  ],
  outputs: [
    { name: "counts", data_type: "ANALYSIS_RESULT", description: "per document: features.words and the most frequent words as labels" },
    { name: "report", data_type: "TEXT", content_type_hint: "wordcount", description: "one line per document: its id and word count" },
    { name: "frequencies", data_type: "WORD_FREQUENCIES", mergeable: true, description: "how often each word occurs, over all texts" },
  ],
  // A data type of this agent's own: the orchestrator learns it from the
  // contract, checks values against the schema, sums two values into one
  // and keeps them in the slot current_word_frequencies.
  data_types: [
    {
      name: "WORD_FREQUENCIES",
      description: "How often each word occurs: word -> count (at least 1).",
      schema: { type: "object", additionalProperties: { type: "integer", minimum: 1 } },
      merge: "sum",
    },
  ],
  params: {
    type: "object",
    properties: { top: { type: "integer", minimum: 1, maximum: 20, description: "how many frequent words to name (default 3)" } },
    additionalProperties: false,
  },
  timeout_ms: 30000,
};

const cfg = {
  heartbeatMs: Number(process.env.AGENT_HEARTBEAT_MS || 5000),
  ackWaitMs: Number(process.env.AGENT_ACK_WAIT_MS || 30000),
  maxDeliver: Number(process.env.AGENT_MAX_DELIVER || 5),
  backoffMs: [1000, 5000, 15000],
  concurrency: Number(process.env.AGENT_CONCURRENCY || 4),
};

const n = names();
const instanceID = process.env.AGENT_INSTANCE || randomBytes(6).toString("hex");
const source = `/agentmesh/agents/${contract.name}/${instanceID}`;
const kvKey = `${contract.name}.${instanceID}`;
// The registry key lives three heartbeats, in whole seconds (at least one).
const ttlSeconds = Math.max(1, Math.floor((3 * cfg.heartbeatMs) / 1000));
const instance = {
  id: instanceID,
  host: hostname(),
  pid: process.pid,
  started_at: new Date().toISOString(),
  version: contract.version,
  concurrency: cfg.concurrency,
};

const log = (...a) => console.error(`[${contract.name} ${instanceID}]`, ...a);

// A retryable error asks for a redelivery with back-off.
class Retryable extends Error {}
// A coded error becomes a failed result with that code.
class Coded extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

const schemas = new Schemas();
for (const def of contract.data_types) schemas.declare(def);
const checkParams = schemas.compile(contract.params);
{
  const problems = schemas.validate("announcement", { contract, instance });
  if (problems.length) {
    log("the contract fails announcement.schema.json:", problems.join("; "));
    process.exit(2);
  }
}

const senders = new Senders(); // checks nothing on a plain mesh
const nc = await connect(connectOptions(contract.name));
const js = jetstream(nc);
const jsm = await jetstreamManager(nc);
const agentsKV = await new Kvm(nc).open(n.agentsBucket);
const files = await new Objm(nc).open(n.filesStore);

// One durable pull consumer per agent name, shared by all its instances.
const consumerCfg = {
  durable_name: contract.name,
  description: `tasks of agent ${contract.name}, shared by its instances`,
  filter_subject: n.task(contract.name),
  ack_policy: AckPolicy.Explicit,
  ack_wait: nanos(cfg.ackWaitMs),
  max_deliver: cfg.maxDeliver,
};
try {
  await jsm.consumers.add(n.tasksStream, consumerCfg);
} catch {
  await jsm.consumers.update(n.tasksStream, contract.name, consumerCfg);
}
const consumer = await js.consumers.get(n.tasksStream, contract.name);

// --- registry ---------------------------------------------------------------

async function announce() {
  const ev = newEvent(types.agentAnnounced, source, { contract, instance });
  const m = toMsg(ev);
  nc.publish(n.announce(contract.name), m.data, { headers: m.headers });
  // The value of the key is the announcement itself; Nats-TTL expires it
  // when the heartbeats stop.
  await js.publish(`$KV.${n.agentsBucket}.${kvKey}`, JSON.stringify({ contract, instance }), { ttl: `${ttlSeconds}s` });
}

async function depart() {
  const ev = newEvent(types.agentDeparted, source, { agent: contract.name, instance: instanceID });
  const m = toMsg(ev);
  nc.publish(n.depart(contract.name), m.data, { headers: m.headers });
  await agentsKV.delete(kvKey);
}

nc.subscribe(n.registryQuery, {
  callback: (err, m) => {
    if (err || !m.reply) return;
    const r = toMsg(newEvent(types.agentAnnounced, source, { contract, instance }));
    m.respond(r.data, { headers: r.headers });
  },
});

// --- cancellation -------------------------------------------------------------

const running = new Map(); // task id -> AbortController

nc.subscribe(n.control(contract.name), {
  callback: (err, m) => {
    if (err) return;
    let body;
    try {
      const ev = fromMsg(m);
      body = ev.data;
    } catch {
      try {
        body = JSON.parse(new TextDecoder().decode(m.data));
      } catch {
        return;
      }
    }
    const ac = body && running.get(body.taskid);
    if (!ac) return;
    ac.abort(new Coded("cancelled", `task ${body.taskid} for ${contract.name} was cancelled by request`));
    if (m.reply) m.respond(JSON.stringify({ taskid: body.taskid, instance: instanceID, cancelled: true }));
  },
});

// --- tasks ----------------------------------------------------------------------

const done = new Set(); // task ids answered by this instance (bounded below)

function failure(code, message, retryable = false) {
  return { success: false, agent: contract.name, capability: contract.capability, error: { code, message, retryable } };
}

function validSubject(s) {
  return typeof s === "string" && s !== "" && !/\s/.test(s) && s.split(".").every((t) => t !== "" && t !== "*" && t !== ">");
}

// validReplyTo: the agent answers only on its own result subjects,
// mesh.result.<agent>.>, never where a task points elsewhere (a KV key, say).
function validReplyTo(s) {
  const own = n.agentResults(contract.name);
  return validSubject(s) && s.startsWith(own) && s.length > own.length;
}

// correlation: the extensions a result and a progress event copy from their task.
function correlation(task) {
  const out = {};
  for (const k of ["conversationid", "runid", "stepid", "traceparent"]) if (task[k]) out[k] = String(task[k]);
  return out;
}

async function publishResult(task, res, msgIDOf) {
  const type = res.success ? types.taskCompleted : types.taskFailed;
  const ext = { ...correlation(task), taskid: task.id };
  const ev = newEvent(type, source, res, ext);
  const subject = validReplyTo(task.replyto) ? task.replyto : n.result(contract.name, task.id);
  const m = toMsg(ev);
  // Inside MESH_RESULTS: a JetStream publish, deduplicated by task id; on a
  // client's or an agent's result subjects by requester too, so another
  // requester's task of the same id keeps its own result.
  const rest = subject.slice(n.agentResults(contract.name).length);
  const msgID = msgIDOf
    ? msgIDOf(rest)
    : rest.startsWith("client.") || rest.startsWith("agent.")
      ? `result-${task.id}@${rest}`
      : `result-${task.id}`;
  await js.publish(subject, m.data, { headers: m.headers, msgID });
}

function progress(task, message, percent) {
  const id = [task.conversationid, task.runid].find((x) => x && tokenRE.test(x)) || task.id;
  const ev = newEvent(types.taskProgress, source, { taskid: task.id, agent: contract.name, message, percent }, {
    ...correlation(task),
    taskid: task.id,
  });
  const m = toMsg(ev);
  nc.publish(n.events(id, "task"), m.data, { headers: m.headers });
}

// deadLetter publishes the task message, headers and body, to
// mesh.dead.<agent> with the code, the reason and the stream sequence it
// was stored at (the sender's acknowledgement names it), once per task.
async function deadLetter(msg, code, reason, attempt) {
  const h = headers();
  if (msg.headers) {
    for (const k of msg.headers.keys()) if (!k.startsWith("Nats-")) h.set(k, msg.headers.get(k));
  }
  h.set("Agentmesh-Dead-Code", code);
  h.set("Agentmesh-Dead-Reason", reason.replace(/[\r\n]+/g, "; ").slice(0, 1000));
  h.set("Agentmesh-Dead-Agent", contract.name);
  h.set("Agentmesh-Dead-Instance", instanceID);
  h.set("Agentmesh-Dead-Deliveries", String(attempt));
  h.set("Agentmesh-Dead-Stream", msg.info.stream);
  h.set("Agentmesh-Dead-Sequence", String(msg.info.streamSequence));
  await js.publish(n.dead(contract.name), msg.data, { headers: h, msgID: `dead-${msg.info.stream}-${msg.info.streamSequence}` });
  return h;
}

// refuseUnanswered dead-letters a task refused with code that no result
// subject can answer (no usable id, or a sender that cannot be told) and,
// on a secure mesh, where only the orchestrator and admin read the dead
// letters, posts the refusal on mesh.dead.<agent>.refused, which every
// identity may read: the code, the reason, where the task was stored and
// its id, none of its data (docs/security.md, "Who sent a task").
async function refuseUnanswered(msg, code, reason, attempt) {
  const dead = await deadLetter(msg, code, reason, attempt);
  if (!senders.secure) return;
  const h = headers();
  for (const k of ["Agentmesh-Dead-Code", "Agentmesh-Dead-Reason", "Agentmesh-Dead-Agent", "Agentmesh-Dead-Stream", "Agentmesh-Dead-Sequence"]) {
    h.set(k, dead.get(k));
  }
  const { id } = rawAttrs(msg);
  if (tokenRE.test(id)) h.set("ce-id", id);
  await js.publish(n.deadRefused(contract.name), new Uint8Array(), {
    headers: h,
    msgID: `refused-${msg.info.stream}-${msg.info.streamSequence}`,
  });
}

// checkSender returns, on a secure mesh, why task (read from msg) may not
// run: its sender cannot be told ({ unknown: true }), or its replyto (or,
// with none, mesh.result.<agent>.<taskid>, the orchestrator's) is not in
// the signer's result subjects ({ refuseOn: the signer's own subject }).
// null when it may run.
function checkSender(msg, task) {
  let id;
  try {
    id = senders.senderOf(msg);
  } catch (err) {
    return { unknown: true, reason: err.message };
  }
  if (!id) return null; // a plain mesh
  const space = senderSpace(n, contract.name, id);
  const replyTo = task.replyto || "";
  if (space === "" || (replyTo.startsWith(space) && replyTo.length > space.length)) return null;
  return {
    refuseOn: space + task.id,
    reason: `replyto outside the sender's result subjects: task ${task.id} from ${id.user} names replyto "${replyTo || n.result(contract.name, task.id)}": ${id.user} may only name a subject under ${space}>`,
  };
}

// validateInputs checks inputs against the contract and each value against
// its data type's schema; it returns every problem.
function validateInputs(inputs) {
  const problems = [];
  for (const decl of contract.inputs) {
    const v = inputs[decl.name];
    if (!v) {
      if (decl.required) problems.push(`input "${decl.name}" (${decl.data_type}) is required but missing`);
      continue;
    }
    if (v.data_type !== decl.data_type) {
      problems.push(`input "${decl.name}" has data type "${v.data_type}"; ${contract.name} declares it ${decl.data_type}`);
      continue;
    }
    const want = decl.content_type_hint || "";
    const have = v.content_type_hint || "";
    if (want && have && want !== have && want !== "mixed") {
      problems.push(`input "${decl.name}" (${decl.data_type}) holds ${have}; ${contract.name} reads ${want}`);
    }
    for (const p of schemas.validate(`types/${decl.data_type}`, v.value)) {
      problems.push(`input "${decl.name}" (${decl.data_type}) value ${p}`);
    }
  }
  for (const name of Object.keys(inputs)) {
    if (!contract.inputs.some((d) => d.name === name)) {
      problems.push(`input "${name}" is not declared by ${contract.name} (it reads: ${contract.inputs.map((d) => d.name).join(", ")})`);
    }
  }
  return problems;
}

async function fileIDs(collection) {
  if (Array.isArray(collection.ids)) return collection.ids;
  // A spilled collection: a JSON array of ids in the object store.
  const blob = await files.getBlob(collection.collection_ref);
  if (!blob) throw new Coded("not_found", `spilled collection ${collection.collection_ref} is not in ${n.filesStore}`);
  return JSON.parse(new TextDecoder().decode(blob));
}

// frequencies counts each word of text, in lower case without punctuation.
function frequencies(text) {
  const freq = new Map();
  for (const w of text.split(/\s+/)) {
    const k = w.toLowerCase().replace(/[^\p{L}\p{N}'-]/gu, "");
    if (k) freq.set(k, (freq.get(k) || 0) + 1);
  }
  return freq;
}

function count(text, top) {
  const words = text.split(/\s+/).filter(Boolean);
  const freq = frequencies(text);
  const labels = [...freq.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, top)
    .map(([w]) => w);
  return { words: words.length, characters: text.length, labels };
}

// execute is the agent's own work.
async function execute(task, req, signal) {
  const top = (req.params && req.params.top) || 3;
  const texts = []; // [id, text]
  const docs = req.inputs && req.inputs.documents;
  if (docs) {
    const ids = await fileIDs(docs.value);
    for (const [i, id] of ids.entries()) {
      if (signal.aborted) throw signal.reason;
      let blob;
      try {
        blob = await files.getBlob(id);
      } catch (err) {
        throw new Retryable(`reading file ${id}: ${err.message}`);
      }
      if (!blob) throw new Coded("not_found", `file ${id} is not in the object store ${n.filesStore}`);
      texts.push([id, new TextDecoder().decode(blob)]);
      progress(task, `read ${id}`, Math.round((100 * (i + 1)) / ids.length));
    }
  }
  if (req.inputs && req.inputs.text) texts.push(["text", req.inputs.text.value]);
  if (texts.length === 0 && req.instruction) texts.push(["instruction", req.instruction]);
  if (texts.length === 0) throw new Coded("invalid_input", "give documents, a text or an instruction to count the words of");

  const now = new Date().toISOString();
  const items = texts.map(([id, text]) => {
    const c = count(text, top);
    return { id, labels: c.labels, features: { words: c.words, characters: c.characters } };
  });
  const total = items.reduce((s, it) => s + it.features.words, 0);
  const report = items.map((it) => `${it.id}: ${it.features.words} words`).join("\n");
  const freq = {};
  for (const [, text] of texts) for (const [w, c] of frequencies(text)) freq[w] = (freq[w] || 0) + c;
  return {
    success: true,
    agent: contract.name,
    capability: contract.capability,
    summary: `counted ${total} words in ${items.length} ${items.length === 1 ? "text" : "texts"}`,
    outputs: {
      counts: { data_type: "ANALYSIS_RESULT", value: { method: "whitespace word count", items }, source: contract.name, produced_at: now },
      report: { data_type: "TEXT", content_type_hint: "wordcount", value: report, source: contract.name, produced_at: now },
      frequencies: { data_type: "WORD_FREQUENCIES", value: freq, source: contract.name, produced_at: now },
    },
  };
}

// run validates and executes one task; it returns the result or throws a
// Retryable error.
async function run(task, msg) {
  const data = task.data === undefined ? {} : task.data;
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    return failure("malformed_event", `task ${task.id}: data must be a JSON object (task.schema.json)`);
  }
  let problems = schemas.validate("task", data);
  if (problems.length) return failure("malformed_event", `task ${task.id}: data fails task.schema.json: ${problems.join("; ")}`);
  const req = { inputs: data.inputs || {}, params: data.params || {}, instruction: data.instruction || "", timeout_ms: data.timeout_ms || 0 };
  problems = validateInputs(req.inputs);
  if (problems.length) return failure("invalid_input", `task ${task.id} for ${contract.name}: ${problems.join("; ")}`);
  if (!checkParams(req.params)) {
    const why = checkParams.errors.map((e) => `${e.instancePath || "params"} ${e.message}`).join("; ");
    return failure("invalid_params", `task ${task.id} for ${contract.name}: params ${JSON.stringify(req.params)}: ${why}`);
  }

  // The deadline extension wins; else the task's timeout_ms; else the contract's.
  let deadline;
  if (task.deadline) {
    deadline = Date.parse(task.deadline);
    if (Number.isNaN(deadline)) return failure("malformed_event", `task ${task.id}: deadline "${task.deadline}" is not an RFC 3339 time`);
  } else if (req.timeout_ms > 0) {
    deadline = Date.now() + req.timeout_ms;
  } else if (contract.timeout_ms > 0) {
    deadline = Date.now() + contract.timeout_ms;
  }
  if (deadline !== undefined && Date.now() >= deadline) {
    return failure("timeout", `task ${task.id} for ${contract.name} was past its deadline before it started`);
  }

  const ac = new AbortController();
  running.set(task.id, ac);
  const timer =
    deadline !== undefined
      ? setTimeout(() => ac.abort(new Coded("timeout", `task ${task.id} for ${contract.name} did not finish by its deadline`)), deadline - Date.now())
      : undefined;
  // Tell the server the task is still being worked on, well within AckWait.
  const working = setInterval(() => msg.working(), Math.max(100, Math.floor(cfg.ackWaitMs / 3)));
  try {
    const aborted = new Promise((_, reject) => ac.signal.addEventListener("abort", () => reject(ac.signal.reason), { once: true }));
    const res = await Promise.race([execute(task, req, ac.signal), aborted]);
    for (const [name, v] of Object.entries(res.outputs || {})) {
      const p = schemas.validate(`types/${v.data_type}`, v.value);
      if (p.length) return failure("agent_error", `${contract.name} produced a bad output "${name}": ${p.join("; ")}`);
    }
    return res;
  } catch (err) {
    if (err instanceof Retryable) throw err;
    if (err instanceof Coded) return failure(err.code, err.message);
    return failure("agent_error", `${contract.name}: ${err && err.message ? err.message : err}`);
  } finally {
    clearTimeout(timer);
    clearInterval(working);
    running.delete(task.id);
  }
}

// rejectMalformed answers a task message that is not a readable task event:
// with a failed result where a reply subject is known, else by dead-lettering it.
async function rejectMalformed(msg, err, attempt) {
  const reason = String(err && err.message ? err.message : err).replace(/\n/g, "; ");
  log("malformed task:", reason);
  const { id } = rawAttrs(msg);
  let { replyto } = rawAttrs(msg);
  let idOK = tokenRE.test(id);
  if (!validReplyTo(replyto)) replyto = "";
  // On a secure mesh only where its signer may be answered: replyto when it
  // lies in the signer's result subjects, else the signer's own with the id.
  const check = checkSender(msg, { id, replyto });
  if (check && check.unknown) {
    replyto = "";
    idOK = false;
  } else if (check) {
    replyto = idOK ? check.refuseOn : "";
  }
  if (idOK || replyto) {
    const res = failure("malformed_event", `task event on ${msg.subject}: ${reason}`);
    res.metrics = { duration_ms: 0, attempt };
    try {
      await publishResult({ id: idOK ? id : "unknown", replyto }, res);
      msg.term("malformed event");
      return;
    } catch (e) {
      log("answering a malformed task:", e.message);
    }
  }
  await refuseUnanswered(msg, "malformed_event", `malformed event: ${reason}`, attempt);
  msg.term("malformed event");
}

// refuseSender ends a task checkSender refused, without running it:
// answered forbidden on the signer's own result subject, or, with no
// sender to answer, refused on mesh.dead.<agent>.refused.
async function refuseSender(msg, task, check, attempt) {
  log(`task refused: ${check.reason}`);
  if (check.refuseOn) {
    const res = failure("forbidden", check.reason);
    res.metrics = { duration_ms: 0, attempt };
    try {
      // Its own message id: the refusal must not take the place of the
      // result of the signer's own task of the same id.
      await publishResult({ ...task, replyto: check.refuseOn }, res, (rest) => `refused-${task.id}@${rest}`);
      msg.term("forbidden");
      return;
    } catch (err) {
      log("answering a refused task:", err.message);
    }
  }
  try {
    await refuseUnanswered(msg, "forbidden", `forbidden: ${check.reason}`, attempt);
  } catch (err) {
    log("refusing a task:", err.message);
    msg.nak(cfg.backoffMs[0]); // not answered: let it come back
    return;
  }
  msg.term("forbidden");
}

async function handle(msg) {
  const start = Date.now();
  const attempt = msg.info.deliveryCount;
  let task;
  try {
    task = fromMsg(msg);
    if (task.type !== types.taskRequested) throw new Error(`event type "${task.type}" on ${msg.subject}: a task is ${types.taskRequested}`);
    if (!tokenRE.test(task.id)) throw new Error(`task id (the event id) "${task.id}" must be 1 to 128 letters, digits, '-', '_' or '='`);
    if (task.replyto && !validReplyTo(task.replyto)) {
      throw new Error(`replyto "${task.replyto}" is not one of this agent's result subjects: name a subject under ${n.agentResults(contract.name)}> (or none)`);
    }
  } catch (err) {
    return rejectMalformed(msg, err, attempt);
  }
  const check = checkSender(msg, task);
  if (check) return refuseSender(msg, task, check, attempt);
  const span = traceTask(contract.name, task, msg.subject, start, attempt);
  try {
    await answer(msg, task, start, attempt, span);
  } finally {
    span.end();
  }
}

async function answer(msg, task, start, attempt, span) {
  if (done.has(task.id)) {
    msg.ack(); // answered already; the redelivery only needs its ack
    return;
  }
  let res;
  try {
    res = await run(task, msg);
  } catch (err) {
    if (attempt < cfg.maxDeliver) {
      const delay = cfg.backoffMs[Math.min(attempt - 1, cfg.backoffMs.length - 1)];
      log(`task ${task.id} will be retried in ${delay} ms (attempt ${attempt}):`, err.message);
      msg.nak(delay);
      return;
    }
    const reason = `gave up after ${attempt} deliveries: ${err.message}`;
    await deadLetter(msg, "retries_exhausted", reason, attempt);
    res = failure("retries_exhausted", reason);
  }
  res.agent = contract.name;
  res.capability = res.capability || contract.capability;
  res.metrics = { ...(res.metrics || {}), duration_ms: Date.now() - start, attempt };
  const problems = schemas.validate("result", res);
  if (problems.length) res = { ...failure("agent_error", `result fails result.schema.json: ${problems.join("; ")}`), metrics: res.metrics };
  span.result(res);
  try {
    await publishResult(task, res);
  } catch (err) {
    log(`publishing the result of ${task.id}:`, err.message);
    msg.nak(cfg.backoffMs[0]); // not answered: let it come back
    return;
  }
  done.add(task.id);
  if (done.size > 4096) done.delete(done.values().next().value);
  msg.ack();
}

// --- main loop -------------------------------------------------------------------

let stopping = false;
const inflight = new Set();

async function consume() {
  let failures = 0;
  while (!stopping) {
    if (inflight.size >= cfg.concurrency) {
      await Promise.race(inflight);
      continue;
    }
    try {
      const batch = await consumer.fetch({ max_messages: cfg.concurrency - inflight.size, expires: 1000 });
      for await (const m of batch) {
        const p = handle(m)
          .catch((err) => log("handling a task:", err.message))
          .finally(() => inflight.delete(p));
        inflight.add(p);
      }
      failures = 0;
    } catch (err) {
      if (stopping) break;
      failures++;
      log("fetching tasks:", err.message);
      await new Promise((r) => setTimeout(r, Math.min(failures * 100, 2000)));
    }
  }
  await Promise.allSettled([...inflight]);
}

await announce();
const heartbeat = setInterval(() => announce().catch((err) => log("heartbeat:", err.message)), cfg.heartbeatMs);
console.log(`${contract.name} ready: instance ${instanceID} consuming ${n.task(contract.name)} from ${n.tasksStream}`);

const loop = consume();

async function shutdown(signal) {
  if (stopping) return;
  stopping = true;
  log(`${signal}: draining`);
  clearInterval(heartbeat);
  await loop;
  try {
    await depart();
  } catch (err) {
    log("departing:", err.message);
  }
  await nc.drain();
  await shutdownTracing().catch((err) => log("flushing spans:", err.message));
  log("departed");
  process.exit(0);
}
process.on("SIGTERM", () => shutdown("SIGTERM"));
process.on("SIGINT", () => shutdown("SIGINT"));
