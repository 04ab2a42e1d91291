// refusal.test.ts: who sent a task (docs/security.md, "Who sent a task"),
// against a live mesh (NATS_URL). The agent runs with credentials of an
// account signing key this test makes, so it checks every task's signature
// as on a secure mesh: a task it cannot answer (unsigned, forged, or
// unreadable with no sender to tell) is dead-lettered and refused with a
// notice on mesh.dead.<agent>.refused that carries only the code, the
// reason, the agent, where the task was stored and its id.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { type Msg, type MsgHdrs, type NatsConnection } from "@nats-io/nats-core";
import { createAccount, createUser, type KeyPair } from "@nats-io/nkeys";

import { Codes, Credentials, EventTypes, Names, deadHeaders, decode, defineAgent, encode, newEvent, run } from "../src/index.js";

const url = process.env.NATS_URL;
if (!url) throw new Error("NATS_URL is not set: these tests need a provisioned mesh (go test ./sdk/typescript/ starts one)");

const nc: NatsConnection = await connect({ servers: url, name: "sdk refusal tests" });
const js = jetstream(nc);
const jsm = await jetstreamManager(nc);
const names = new Names();
const stops: Array<() => Promise<void>> = [];
after(async () => {
  for (const s of stops) await s();
  await nc.drain();
});

const b64 = (s: string | Uint8Array) => Buffer.from(s).toString("base64url");

// credentials returns the decorated credentials of user (client-alice,
// agent-X) issued by signer for account, as `agentmesh creds` writes them.
function credentials(signer: KeyPair, account: KeyPair, user: string): Credentials {
  const kp = createUser();
  const head = b64(JSON.stringify({ typ: "JWT", alg: "ed25519-nkey" }));
  const claims = b64(
    JSON.stringify({
      iss: signer.getPublicKey(),
      sub: kp.getPublicKey(),
      name: user,
      iat: Math.floor(Date.now() / 1000),
      nats: { issuer_account: account.getPublicKey(), type: "user", version: 2 },
    }),
  );
  const jwt = `${head}.${claims}.${b64(signer.sign(new TextEncoder().encode(`${head}.${claims}`)))}`;
  const seed = new TextDecoder().decode(kp.getSeed());
  return Credentials.fromText(
    `-----BEGIN NATS USER JWT-----\n${jwt}\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`,
  );
}

const account = createAccount();
const signer = createAccount(); // the account's signing key
const agentName = `Guarded-${randomBytes(3).toString("hex")}`;
const agentCreds = credentials(signer, account, `agent-${agentName}`);
const alice = credentials(signer, account, "client-alice");
const stranger = credentials(createAccount(), account, "client-alice"); // same name, another mesh's key

let ran = 0;
const agent = await run(
  nc,
  defineAgent(
    {
      name: agentName,
      capability: "TRANSFORMATION",
      description: "a test agent that only takes signed tasks",
      inputs: [{ name: "text", data_type: "TEXT" }],
      outputs: [{ name: "text", data_type: "TEXT" }],
    },
    () => {
      ran++;
      return { outputs: { text: "ran" } };
    },
  ),
  { handleSignals: false, log: () => undefined, credentials: agentCreds, direct: false },
);
stops.push(() => agent.stop());

// Every notice, as alice would read it with a plain subscription.
const notices: Msg[] = [];
let noticeArrived: () => void = () => undefined;
const sub = nc.subscribe(names.deadRefused(agentName), {
  callback: (_, m) => {
    notices.push(m);
    noticeArrived();
  },
});
await nc.flush();
stops.push(async () => sub.unsubscribe());

// task returns the message of a task for the agent with id, to alice's own
// result subject unless replyto says otherwise; signed by creds when given.
function task(id: string, opts: { creds?: Credentials; replyto?: string; type?: string } = {}) {
  const replyto = opts.replyto ?? names.clientResult(agentName, "alice", id);
  const m = encode(newEvent(opts.type ?? EventTypes.taskRequested, "test", { inputs: { text: { data_type: "TEXT", value: "pwned" } } }, { replyto }, id));
  opts.creds?.sign(names.task(agentName), m.headers, m.data);
  return m;
}

async function publish(m: { headers: MsgHdrs; data: Uint8Array }): Promise<number> {
  const ack = await js.publish(names.task(agentName), m.data, { headers: m.headers });
  return ack.seq;
}

// notice waits for the refusal of the task stored at seq.
async function notice(seq: number): Promise<Msg> {
  const until = Date.now() + 20_000;
  for (;;) {
    const n = notices.find((m) => m.headers?.get(deadHeaders.sequence) === String(seq));
    if (n) return n;
    if (Date.now() > until) throw new Error(`no refusal notice for the task at sequence ${seq} on ${names.deadRefused(agentName)}`);
    await new Promise<void>((r) => {
      noticeArrived = r;
      setTimeout(r, 200);
    });
  }
}

async function lastOn(subject: string, stream: string) {
  try {
    return await jsm.streams.getMessage(stream, { last_by_subj: subject });
  } catch {
    return null;
  }
}

test("unsigned and forged tasks are refused with forbidden on mesh.dead.<agent>.refused, carrying none of their data, and dead-lettered", async () => {
  const tampered = task("t-tampered", { creds: alice });
  tampered.data = new TextEncoder().encode(new TextDecoder().decode(tampered.data).replace("pwned", "PWNED"));
  const forgedHeaders = task("t-forged");
  forgedHeaders.headers.set("Agentmesh-Sender", "eyJhbGciOiJlZDI1NTE5In0.e30.c2ln");
  forgedHeaders.headers.set("Agentmesh-Signature", "c2lnbmF0dXJl");
  for (const tc of [
    { id: "t-unsigned", msg: task("t-unsigned"), says: "send it with agentmesh credentials" },
    { id: "t-tampered", msg: tampered, says: "the signature of client-alice does not match the task" },
    { id: "t-forged", msg: forgedHeaders, says: "the sender JWT" },
    { id: "t-stranger", msg: task("t-stranger", { creds: stranger }), says: "not issued by this mesh's account signing key" },
  ]) {
    const seq = await publish(tc.msg);
    const n = await notice(seq);
    assert.equal(n.headers?.get(deadHeaders.code), Codes.forbidden, tc.id);
    const reason = n.headers?.get(deadHeaders.reason) || "";
    assert.match(reason, /^forbidden: task not signed by an identity of this mesh/, tc.id);
    assert.ok(reason.includes(tc.says), `${tc.id}: reason ${reason} does not say ${tc.says}`);
    assert.equal(n.headers?.get("ce-id"), tc.id);
    assert.equal(n.headers?.get(deadHeaders.agent), agentName);
    assert.equal(n.headers?.get(deadHeaders.stream), names.tasksStream);
    assert.equal(n.data.length, 0, `${tc.id}: the notice carries data`);
    const kept = [...n.headers!.keys()].filter((k) => !k.startsWith("Nats-")).sort();
    assert.deepEqual(kept, ["Agentmesh-Dead-Agent", "Agentmesh-Dead-Code", "Agentmesh-Dead-Reason", "Agentmesh-Dead-Sequence", "Agentmesh-Dead-Stream", "ce-id"], tc.id);
    const stored = await jsm.streams.getMessage(names.deadStream, { last_by_subj: names.deadRefused(agentName) });
    assert.equal(stored?.header.get("Nats-Msg-Id"), `refused-${names.tasksStream}-${seq}`);

    const dead = await lastOn(names.dead(agentName), names.deadStream);
    assert.equal(dead?.header.get(deadHeaders.sequence), String(seq), `${tc.id}: no dead letter`);
    assert.equal(dead?.header.get(deadHeaders.code), Codes.forbidden);
    assert.equal(dead?.header.get("ce-id"), tc.id);
    assert.equal(new TextDecoder().decode(dead!.data), new TextDecoder().decode(tc.msg.data), `${tc.id}: the dead letter is not the whole task`);
    assert.equal(await lastOn(names.clientResult(agentName, "alice", tc.id), names.resultsStream), null, `${tc.id}: answered on alice's subject`);
  }
  assert.equal(ran, 0, "a refused task ran");
});

test("an unreadable task: answered malformed_event on its signer's own subject, or, unsigned, refused on mesh.dead.<agent>.refused", async () => {
  // Signed by alice, not a task event, naming bob's result subject: alice
  // is told, on her own subject, and nothing reaches bob's.
  const bob = names.clientResult(agentName, "bob", "t-odd");
  await publish(task("t-odd", { creds: alice, replyto: bob, type: "io.agentmesh.task.odd" }));
  let answer = await lastOn(names.clientResult(agentName, "alice", "t-odd"), names.resultsStream);
  for (const until = Date.now() + 20_000; !answer && Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
    answer = await lastOn(names.clientResult(agentName, "alice", "t-odd"), names.resultsStream);
  }
  assert.ok(answer, "alice's unreadable task was not answered on her own subject");
  const ev = decode({ headers: answer.header, data: answer.data });
  assert.equal(ev.type, EventTypes.taskFailed);
  assert.equal((ev.data as { error: { code: string } }).error.code, Codes.malformedEvent);
  assert.equal(await lastOn(bob, names.resultsStream), null, "answered on bob's subject");

  // The same unsigned: nobody may be told but through the notice.
  const seq = await publish(task("t-odd-unsigned", { type: "io.agentmesh.task.odd" }));
  const n = await notice(seq);
  assert.equal(n.headers?.get(deadHeaders.code), Codes.malformedEvent);
  assert.match(n.headers?.get(deadHeaders.reason) || "", /^malformed event: event type "io.agentmesh.task.odd"/);
  assert.equal(n.headers?.get("ce-id"), "t-odd-unsigned");
  assert.equal(await lastOn(names.clientResult(agentName, "alice", "t-odd-unsigned"), names.resultsStream), null);
});

test("a task signed by an identity of the mesh runs", async () => {
  const id = "t-signed";
  await publish(task(id, { creds: alice }));
  let got = await lastOn(names.clientResult(agentName, "alice", id), names.resultsStream);
  for (const until = Date.now() + 20_000; !got && Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
    got = await lastOn(names.clientResult(agentName, "alice", id), names.resultsStream);
  }
  assert.ok(got, "alice's signed task was not answered");
  assert.equal(decode({ headers: got.header, data: got.data }).type, EventTypes.taskCompleted);
  assert.equal(ran, 1);
});
