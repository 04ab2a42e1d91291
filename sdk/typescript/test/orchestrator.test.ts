// orchestrator.test.ts: the client side against a live orchestrator (the
// Go test starts one without an LLM, so chat turns use the offline
// planner): a chat turn, and a pipeline with an approval step answered by
// the client while it follows the run. Skipped without
// AGENTMESH_TEST_ORCHESTRATOR=1.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { connect } from "@nats-io/transport-node";

import { EventTypes, MeshClient, defineAgent, run, type MeshEvent } from "../src/index.js";

const enabled = process.env.AGENTMESH_TEST_ORCHESTRATOR === "1" && !!process.env.NATS_URL;
const skip = enabled ? false : "needs a live orchestrator: set NATS_URL and AGENTMESH_TEST_ORCHESTRATOR=1 (go test ./sdk/typescript/ does)";

const nc = enabled ? await connect({ servers: process.env.NATS_URL }) : undefined;
const stops: Array<() => Promise<void>> = [];
after(async () => {
  for (const s of stops) await s();
  await nc?.drain();
});

async function tally() {
  const name = `ZebraTally${randomBytes(3).toString("hex")}`;
  const a = await run(
    nc!,
    defineAgent(
      {
        name,
        version: "1.0.0",
        capability: "ANALYSIS",
        description: "Counts each vowel of the instruction or a text: a zebra quokka tally.",
        inputs: [{ name: "text", data_type: "TEXT" }],
        outputs: [{ name: "tally", data_type: "TEXT", content_type_hint: "vowels" }],
        timeout_ms: 20000,
      },
      (t) => {
        const s = t.value<string>("text") ?? t.instruction;
        const n = [...s].filter((c) => "aeiouAEIOU".includes(c)).length;
        return { summary: `${n} vowels`, outputs: { tally: `${n} vowels` } };
      },
    ),
    { handleSignals: false, log: () => undefined },
  );
  stops.push(() => a.stop());
  return name;
}

test("a chat turn reaches a TypeScript agent and streams its progress", { skip }, async () => {
  const name = await tally();
  const client = new MeshClient(nc!);
  const seen: MeshEvent[] = [];
  // The offline planner gives the agent the quoted text to work on. It
  // plans from the agents the orchestrator knows, which learns of the new
  // agent a moment after it announces itself: until then the turn is
  // planned without it, and is asked again.
  const deadline = Date.now() + 10_000;
  let answer;
  for (;;) {
    answer = await client.chat('tally the vowels of "zebra quokka"', { onEvent: (e) => seen.push(e), waitMs: 60_000 });
    if (answer.tool_calls?.some((c) => c.agent === name) || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(answer.state, "completed", JSON.stringify(answer));
  assert.ok(answer.tool_calls?.some((c) => c.agent === name && c.success), JSON.stringify(answer.tool_calls));
  assert.match(answer.output, /5 vowels/);
  assert.ok(seen.some((e) => e.type === EventTypes.chatProgress), `no chat progress among ${seen.map((e) => e.type).join(", ")}`);
});

test("a pipeline with an approval step: submitted, followed, approved by the client, completed", { skip }, async () => {
  const name = await tally();
  const client = new MeshClient(nc!);
  // The orchestrator learns of the new agent from the registry a moment
  // after it announces itself: until then a run naming it is refused
  // (unknown agent), and is submitted again.
  const deadline = Date.now() + 10_000;
  let kinds: string[] = [];
  let final;
  for (;;) {
    const run = await client.submit({
      name: "approve-then-tally",
      steps: [
        { id: "ok", kind: "approval", human: { prompt: "tally the vowels?" }, timeout_ms: 60_000 },
        { id: "count", agent: name, depends_on: ["ok"], inputs: { text: "text:an approved sentence" } },
      ],
    });
    kinds = [];
    final = await client.followRun(run, {
      waitMs: 60_000,
      onEvent: (e) => {
        kinds.push(`${e.type}:${e.ext.stepid || ""}`);
        if (e.type === "io.agentmesh.pipeline.step.waiting" && e.ext.stepid === "ok") {
          void client.resolve({ runid: run, step: "ok", decision: "approve", by: "sdk test" });
        }
      },
    });
    const unknown = final.status === "failed" && /unknown agent/.test(final.error ?? "");
    if (!unknown || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(final.status, "completed", `${JSON.stringify(final)}; events ${kinds.join(", ")}`);
  assert.equal(final.completed, 2);
  assert.ok(kinds.includes("io.agentmesh.pipeline.step.completed:count"), kinds.join(", "));
});
