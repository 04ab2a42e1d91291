// client.js: submits one chat turn to an agentmesh mesh with the SDK's
// MeshClient and prints its progress and the model's text as they stream
// (the text only when the orchestrator has a model that streams), then the
// final answer. Exit status 0 when the turn ends "completed", 1 when it ends
// otherwise, 2 on a usage or connection error or when no answer comes in
// time.
//
//   NATS_URL=nats://127.0.0.1:4222 node client.js [--conversation ID] [--timeout 60] MESSAGE...

import { connect } from "@nats-io/transport-node";
import { EventTypes, MeshClient, connectOptions } from "@agentmesh/sdk";

import { names } from "./mesh.js";

function usage(msg) {
  console.error(`client.js: ${msg}\nusage: node client.js [--conversation ID] [--timeout SECONDS] MESSAGE...`);
  process.exit(2);
}

const args = process.argv.slice(2);
let conversation = "";
let timeoutS = 60;
const words = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--conversation") conversation = args[++i] || usage("--conversation needs an id");
  else if (args[i] === "--timeout") timeoutS = Number(args[++i]);
  else words.push(args[i]);
}
const message = words.join(" ").trim();
if (!message) usage("give the message to send");
if (conversation && !/^[A-Za-z0-9_=-]{1,128}$/.test(conversation)) usage(`conversation id "${conversation}": use 1 to 128 letters, digits, '-', '_' or '='`);
if (!(timeoutS > 0)) usage("--timeout must be a positive number of seconds");

const nc = await connect(connectOptions("agentmesh node client")).catch((err) => usage(`connecting to NATS: ${err.message}`));
const mesh = new MeshClient(nc, { prefix: names().prefix, source: "/agentmesh/examples/node/client" });

let seen = "";
let writing = false; // a line of the model's text is open
const onEvent = (e) => {
  const d = e.data || {};
  if (writing && (e.type === EventTypes.chatProgress || e.type === EventTypes.taskProgress)) {
    process.stdout.write("\n");
    writing = false;
  }
  if (!seen && e.ext.conversationid) console.log(`conversation: ${(seen = e.ext.conversationid)}`);
  if (e.type === EventTypes.chatProgress) console.log(`… ${d.message}`);
  if (e.type === EventTypes.taskProgress) console.log(`… ${d.agent || "agent"}: ${d.message}${d.percent ? ` (${d.percent}%)` : ""}`);
};
// The model's text, piece by piece, as it writes it (pieces may be lost;
// the answer below is whole).
const onDelta = (d) => {
  if (!writing) process.stdout.write("> ");
  writing = true;
  process.stdout.write(d.text);
};
let answer;
try {
  answer = await mesh.chat(message, { conversationId: conversation || undefined, waitMs: timeoutS * 1000, onEvent, onDelta });
  if (writing) process.stdout.write("\n");
} catch (err) {
  console.error(`no answer within ${timeoutS}s (${err.message}): is an orchestrator running (agentmesh orchestrator)?`);
  process.exit(2);
}
if (!seen) console.log(`conversation: ${answer.conversation_id}`);
for (const call of answer.tool_calls || []) {
  console.log(`  ${call.success ? "✓" : "✗"} ${call.agent}: ${call.success ? call.summary || "" : call.error || ""}`);
}
console.log(`\n${answer.output}\n`);
console.log(`state: ${answer.state} (${answer.steps} steps, ${answer.duration_ms} ms, planner ${answer.planner || "?"})`);
await nc.drain();
process.exit(answer.state === "completed" ? 0 : 1);
