// signing.test.ts: the signed-task digest and call-id tags agree with the
// Go side (vectors from bus.TaskDigest and schemas.TaskTag), and identities
// parse as the Go side spells them.

import { test } from "node:test";
import assert from "node:assert/strict";
import { headers } from "@nats-io/nats-core";

import { parseUser, taskDigest, taskTag } from "../src/signing.js";

test("taskDigest covers subject, ce- headers and Content-Type sorted, and data, as bus.TaskDigest", () => {
  const h = headers();
  h.set("ce-type", "io.agentmesh.task.requested");
  h.set("Nats-Msg-Id", "t-1"); // not covered
  h.set("ce-id", "t-1");
  h.set("Content-Type", "application/json");
  const d = taskDigest("mesh.task.A", h, new TextEncoder().encode('{"a":1}'));
  assert.equal(Buffer.from(d).toString("hex"), "c863e96b32d2728748affbc72d93e81bf96d2793e5cfbb1be24b3bd6fc8104c3");
});

test("taskTag matches schemas.TaskTag", () => {
  assert.equal(taskTag("t-1-c1", "c2lnbmF0dXJl"), "t-1-c1-l6yhue2v7qendlnx");
  assert.equal(taskTag("t-1-c1", ""), "t-1-c1");
});

test("identities parse as the Go side spells them", () => {
  assert.deepEqual(parseUser("client-alice"), { role: "client", name: "alice" });
  assert.deepEqual(parseUser("agent-Text-Agent"), { role: "agent", name: "Text-Agent" });
  assert.deepEqual(parseUser("orchestrator"), { role: "orchestrator", name: "" });
  assert.throws(() => parseUser("client"), /user "client" is no agentmesh identity/);
  assert.throws(() => parseUser("robot-x"), /no agentmesh identity/);
});
