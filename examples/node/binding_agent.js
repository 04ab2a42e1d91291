// binding_agent.js: a minimal agent that reads its tasks and writes its
// results through binding.js, to show the mesh and the cloudevents SDK agree
// on binary-mode header values. Each result echoes what the task carried:
// its subject and "label" extension in the summary (as JSON), the label again
// as the result's own "label" extension. Its headers are encoded more than
// the binding asks (every byte but letters and digits, lower-case hex), as
// some senders do. It prints "ready" once its consumer is in place.
//
//   NATS_URL=nats://127.0.0.1:4222 AGENT_NAME=NodeBinding node binding_agent.js

import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, AckPolicy } from "@nats-io/jetstream";

import { names, types, newEvent, connectOptions } from "./mesh.js";
import { toNatsMsg, fromNatsMsg, encodeEverything } from "./binding.js";

const agent = process.env.AGENT_NAME || "NodeBinding";
const n = names();
const nc = await connect(connectOptions(agent));
const js = jetstream(nc);
const jsm = await jetstreamManager(nc);
await jsm.consumers.add(n.tasksStream, { durable_name: agent, filter_subject: n.task(agent), ack_policy: AckPolicy.Explicit });
const consumer = await js.consumers.get(n.tasksStream, agent);
const tasks = await consumer.consume();
console.log("ready");

for await (const m of tasks) {
  let task;
  try {
    task = fromNatsMsg(m);
  } catch (err) {
    console.error(`unreadable task on ${m.subject}: ${err.message}`);
    m.term();
    continue;
  }
  const label = task.label || "";
  const result = { success: true, agent, summary: JSON.stringify({ subject: task.subject || "", label }) };
  const ev = newEvent(types.taskCompleted, `/agentmesh/agents/${agent}`, result, {
    taskid: task.id,
    label,
    conversationid: task.conversationid,
    runid: task.runid,
    stepid: task.stepid,
  });
  const out = toNatsMsg(ev, encodeEverything);
  const own = n.results(agent);
  const to = task.replyto && task.replyto.startsWith(own) ? task.replyto : n.result(agent, task.id);
  await js.publish(to, out.data, { headers: out.headers, msgID: `result-${task.id}` });
  m.ack();
  console.log(`answered ${task.id}`);
}
