// binding_client.js: calls an agent directly with tasks whose header values
// are percent-encoded, and prints each result as one JSON line once decoded
// through binding.js. The first task encodes every byte but letters and
// digits in lower-case hex (the time's ':' too), with "Euro € 😀" as its
// subject; the second carries an overlong encoding (%C0%A0) in ce-subject,
// which the receiver must refuse. Exit 0 when both answers came, 2 if not.
//
//   NATS_URL=nats://127.0.0.1:4222 AGENT=Upper node binding_client.js

import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";

import { names, types, newEvent, connectOptions } from "./mesh.js";
import { toNatsMsg, fromNatsMsg, encodeEverything } from "./binding.js";

const agent = process.env.AGENT || "Upper";
const n = names();
const nc = await connect(connectOptions("binding client"));
const js = jetstream(nc);
const timer = setTimeout(() => {
  console.error("no answer within 30s");
  process.exit(2);
}, 30000);

const cases = [
  { name: "encoded", subject: "Euro € 😀" },
  { name: "overlong", subject: "x", header: ["ce-subject", "%C0%A0"] },
];
const answers = [];
for (const c of cases) {
  let ev = newEvent(types.taskRequested, "/agentmesh/examples/node/binding-client", {
    inputs: { text: { data_type: "TEXT", value: "héllo wörld" } },
  });
  ev = ev.cloneWith({
    subject: c.subject,
    replyto: n.result(agent, ev.id),
    conversationid: `conv-${c.name}`,
    traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
  });
  const sub = nc.subscribe(n.result(agent, ev.id), { max: 1 });
  const m = toNatsMsg(ev, encodeEverything);
  if (c.header) m.headers.set(c.header[0], c.header[1]);
  await js.publish(n.task(agent), m.data, { headers: m.headers, msgID: ev.id });
  answers.push(
    (async () => {
      for await (const r of sub) {
        const e = fromNatsMsg(r);
        const out = { case: c.name, task: ev.id, raw_time: r.headers.get("ce-time") };
        for (const k of ["type", "source", "time", "taskid", "conversationid", "traceparent"]) out[k] = e[k];
        out.data = e.data;
        console.log(JSON.stringify(out));
      }
    })(),
  );
}
await Promise.all(answers);
clearTimeout(timer);
await nc.drain();
