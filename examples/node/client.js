// client.js: submits one chat turn to an agentmesh mesh and prints its
// progress as it streams, then the final answer. Exit status 0 when the
// turn ends "completed", 1 when it ends otherwise, 2 on a usage or
// connection error or when no answer comes in time.
//
//   NATS_URL=nats://127.0.0.1:4222 node client.js [--conversation ID] [--timeout 60] MESSAGE...

import { connect } from "@nats-io/transport-node";
import { jetstream, DeliverPolicy } from "@nats-io/jetstream";

import { names, types, toMsg, fromMsg, newEvent, tokenRE, Schemas, connectOptions } from "./mesh.js";

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
if (conversation && !tokenRE.test(conversation)) usage(`conversation id "${conversation}": use 1 to 128 letters, digits, '-', '_' or '='`);
if (!(timeoutS > 0)) usage("--timeout must be a positive number of seconds");

const n = names();
const schemas = new Schemas();
const nc = await connect(connectOptions("agentmesh node client")).catch((err) =>
  usage(`connecting to NATS: ${err.message}`),
);
const js = jetstream(nc);

// The request. Without a conversation id, the event id names a new conversation.
const data = { message };
if (conversation) data.conversation_id = conversation;
let ev = newEvent(types.chatRequested, "/agentmesh/examples/node/client", data);
const conv = conversation || ev.id;
ev = ev.cloneWith({ conversationid: conv });
{
  const problems = schemas.validate("chat-request", ev.data);
  if (problems.length) usage(`the request fails chat-request.schema.json: ${problems.join("; ")}`);
}

// Watch the conversation's events from MESH_EVENTS before publishing, so
// nothing is missed; only events newer than the request are read.
const since = new Date(Date.now() - 1000).toISOString();
const watcher = await js.consumers.get(n.eventsStream, {
  filter_subjects: [n.eventsOf(conv)],
  deliver_policy: DeliverPolicy.StartTime,
  opt_start_time: since,
});
const events = await watcher.consume();

const req = toMsg(ev);
const ack = await js.publish(n.chatRequest, req.data, { headers: req.headers, msgID: ev.id });
console.log(`conversation: ${conv}`);
console.log(`request: ${ev.id} (stored in ${ack.stream} #${ack.seq})`);

const timer = setTimeout(() => {
  console.error(`no answer within ${timeoutS}s: is an orchestrator running (agentmesh orchestrator)?`);
  process.exit(2);
}, timeoutS * 1000);

for await (const m of events) {
  let e;
  try {
    e = fromMsg(m);
  } catch (err) {
    console.error(`skipping an unreadable event on ${m.subject}: ${err.message}`);
    continue;
  }
  const d = e.data || {};
  switch (e.type) {
    case types.chatProgress:
      console.log(`… ${d.message}`);
      break;
    case types.taskProgress:
      console.log(`… ${d.agent || "agent"}: ${d.message}${d.percent ? ` (${d.percent}%)` : ""}`);
      break;
    case types.chatResponded: {
      // The response to request R carries Nats-Msg-Id chat-R; an earlier
      // turn's response (replayed) is skipped.
      const id = m.headers && m.headers.get("Nats-Msg-Id");
      if (id && id !== `chat-${ev.id}`) break;
      const problems = schemas.validate("chat-response", d);
      if (problems.length) console.error(`the response fails chat-response.schema.json: ${problems.join("; ")}`);
      for (const call of d.tool_calls || []) {
        console.log(`  ${call.success ? "✓" : "✗"} ${call.agent}: ${call.success ? call.summary || "" : call.error || ""}`);
      }
      console.log(`\n${d.output}\n`);
      console.log(`state: ${d.state} (${d.steps} steps, ${d.duration_ms} ms, planner ${d.planner || "?"})`);
      clearTimeout(timer);
      process.exit(d.state === "completed" ? 0 : 1);
    }
    default:
      break;
  }
}
