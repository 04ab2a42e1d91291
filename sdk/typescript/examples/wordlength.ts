// wordlength.ts: an agentmesh agent in TypeScript. It measures the words
// of a text or of documents and declares a data type of its own.
//   NATS_URL=nats://127.0.0.1:4222 node dist/examples/wordlength.js
import { connect } from "@nats-io/transport-node";
import { connectOptions, defineAgent, run } from "@agentmesh/sdk";

const agent = defineAgent(
  {
    name: process.env.AGENT_NAME || "TsWordLength",
    version: "1.0.0",
    capability: "ANALYSIS",
    description: "Measures the words of a text or of documents: how many, and how long on average (written in TypeScript).",
    inputs: [
      { name: "text", data_type: "TEXT", description: "a text to measure" },
      { name: "documents", data_type: "FILE_IDS", content_type_hint: "documents", description: "documents to measure" },
    ],
    outputs: [
      { name: "lengths", data_type: "WORD_LENGTHS", mergeable: true, description: "word length -> how many words have it" },
      { name: "report", data_type: "TEXT", content_type_hint: "wordlength", description: "how many words, and their average length" },
    ],
    data_types: [{ name: "WORD_LENGTHS", description: "How many words have each length.", schema: { type: "object", additionalProperties: { type: "integer", minimum: 1 } }, merge: "sum" }],
    timeout_ms: 30000,
  },
  async (task) => {
    const texts = [task.value<string>("text") ?? ""];
    for (const id of await task.fileIDs("documents")) texts.push(new TextDecoder().decode(await task.files.read(id)));
    const lengths: Record<string, number> = {};
    const words = texts.join(" ").split(/\s+/).filter(Boolean);
    for (const w of words) lengths[w.length] = (lengths[w.length] || 0) + 1;
    const report = `${words.length} words, ${(words.join("").length / (words.length || 1)).toFixed(1)} letters on average`;
    task.progress(report, 100);
    return { summary: `measured ${words.length} words`, outputs: { lengths, report } };
  },
);

const nc = await connect(connectOptions(agent.contract.name));
await run(nc, agent, { concurrency: Number(process.env.AGENT_CONCURRENCY || 4) });
console.log(`${agent.contract.name} ready`);
