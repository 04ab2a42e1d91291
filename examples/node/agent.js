// agent.js: NodeWordCount, an agentmesh agent in Node.js on the TypeScript
// SDK (@agentmesh/sdk, sdk/typescript). It counts the words of documents
// (read from the mesh_files object store by file id) or of a text, and
// names the most frequent words.
//
// What is here is what is specific to this agent: its contract and its
// work. The SDK's run() does every duty of docs/protocol.md (announce and
// heartbeat, the durable consumer, validation against the contract and the
// schemas, results and acks, retry and dead letters, cancel requests, the
// micro endpoint for direct calls, who signed a task on a secure mesh,
// drain and depart); sdk/typescript/README.md lists them.
//
//   NATS_URL=nats://127.0.0.1:4222 node agent.js
//   NATS_CREDS=agent.creds NATS_CA=ca.pem node agent.js    (a secure mesh)

import { connect } from "@nats-io/transport-node";
import { MeshError, Codes, connectOptions, defineAgent, run } from "@agentmesh/sdk";

import { names } from "./mesh.js";
import { shutdownTracing } from "./tracing.js";

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
  const labels = [...frequencies(text).entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, top)
    .map(([w]) => w);
  return { words: text.split(/\s+/).filter(Boolean).length, characters: text.length, labels };
}

// execute is the agent's work: a missing file fails not_found, a file
// store that fails is retried with back-off (both thrown by files.read).
const agent = defineAgent(contract, async (task) => {
  const top = task.params.top || 3;
  const texts = []; // [id, text]
  const ids = await task.fileIDs("documents");
  for (const [i, id] of ids.entries()) {
    texts.push([id, new TextDecoder().decode(await task.files.read(id))]);
    task.progress(`read ${id}`, Math.round((100 * (i + 1)) / ids.length));
  }
  if (task.value("text") !== undefined) texts.push(["text", task.value("text")]);
  if (texts.length === 0 && task.instruction) texts.push(["instruction", task.instruction]);
  if (texts.length === 0) throw new MeshError(Codes.invalidInput, "give documents, a text or an instruction to count the words of");

  const items = texts.map(([id, text]) => {
    const c = count(text, top);
    return { id, labels: c.labels, features: { words: c.words, characters: c.characters } };
  });
  const total = items.reduce((s, it) => s + it.features.words, 0);
  const freq = {};
  for (const [, text] of texts) for (const [w, c] of frequencies(text)) freq[w] = (freq[w] || 0) + c;
  return {
    summary: `counted ${total} words in ${items.length} ${items.length === 1 ? "text" : "texts"}`,
    outputs: {
      counts: { method: "whitespace word count", items },
      report: items.map((it) => `${it.id}: ${it.features.words} words`).join("\n"),
      frequencies: freq,
    },
  };
});

const env = (name, fallback) => Number(process.env[name] || fallback);
const nc = await connect(connectOptions(contract.name));
const running = await run(nc, agent, {
  prefix: names().prefix,
  instanceId: process.env.AGENT_INSTANCE || undefined,
  heartbeatMs: env("AGENT_HEARTBEAT_MS", 5000),
  ackWaitMs: env("AGENT_ACK_WAIT_MS", 30000),
  maxDeliver: env("AGENT_MAX_DELIVER", 5),
  concurrency: env("AGENT_CONCURRENCY", 4),
  handleSignals: false, // below: the spans are flushed too
});
console.log(`${contract.name} ready: instance ${running.instanceId} consuming ${names().task(contract.name)} from ${names().tasksStream}`);

// SIGTERM drains: no new tasks, running ones finish, the departure is
// announced and the registry key deleted; then the spans still queued go.
async function shutdown(signal) {
  console.error(`[${contract.name}] ${signal}: draining`);
  await running.stop();
  await nc.drain();
  await shutdownTracing().catch((err) => console.error(`[${contract.name}] flushing spans: ${err.message}`));
  console.error(`[${contract.name}] departed`);
  process.exit(0);
}
process.once("SIGTERM", () => shutdown("SIGTERM"));
process.once("SIGINT", () => shutdown("SIGINT"));
