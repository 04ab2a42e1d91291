// names.test.ts: the subjects of owned events and text, without a server.

import { test } from "node:test";
import assert from "node:assert/strict";

import { Names } from "../src/names.js";

test("the events and text of what a client owns end in its name", () => {
  const n = new Names("mesh");
  assert.equal(n.events("c1", "chat"), "mesh.events.c1.chat");
  assert.equal(n.events("c1", "chat", "alice"), "mesh.events.c1.chat.alice");
  assert.equal(n.eventsOf("r1"), "mesh.events.r1.>");
  assert.equal(n.eventsOf("r1", "alice"), "mesh.events.r1.*.alice");
  assert.equal(n.deltas("c1"), "mesh.delta.c1");
  assert.equal(n.deltas("c1", "alice"), "mesh.delta.c1.alice");
});
