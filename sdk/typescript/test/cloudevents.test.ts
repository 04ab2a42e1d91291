// cloudevents.test.ts: header values and both event modes, without a server.

import { test } from "node:test";
import assert from "node:assert/strict";
import { headers } from "@nats-io/nats-core";

import { decode, decodeHeaderValue, encode, encodeHeaderValue, newEvent } from "../src/cloudevents.js";

test("header values are percent-encoded as the CloudEvents NATS binding asks", () => {
  assert.equal(encodeHeaderValue("Euro € 😀"), "Euro%20%E2%82%AC%20%F0%9F%98%80");
  assert.equal(encodeHeaderValue("100%"), "100%25");
  assert.equal(encodeHeaderValue("2026-03-14T09:26:53Z"), "2026-03-14T09:26:53Z");
  assert.equal(decodeHeaderValue("ce-time", "2026-03-14T09%3a26%3A53Z"), "2026-03-14T09:26:53Z");
  assert.equal(decodeHeaderValue("ce-subject", ' "say \\"hi\\"" '), 'say "hi"');
  assert.equal(decodeHeaderValue("ce-subject", "a+b c"), "a+b c");
  assert.throws(() => decodeHeaderValue("ce-subject", "%C0%A0"), /header ce-subject value "%C0%A0": the bytes are not valid UTF-8/);
  assert.throws(() => decodeHeaderValue("ce-subject", "%4"), /two hex digits/);
  assert.throws(() => decodeHeaderValue("ce-subject", '"open'), /does not end/);
});

test("an event round-trips in binary mode, and structured mode is read", () => {
  const ev = newEvent("io.agentmesh.task.requested", "/x y", { a: 1 }, { runid: "run-1", empty: "" }, "t-1");
  const m = encode(ev);
  assert.equal(m.headers.get("ce-source"), "/x%20y");
  assert.equal(m.headers.get("ce-empty"), "");
  const back = decode(m);
  assert.equal(back.source, "/x y");
  assert.deepEqual(back.data, { a: 1 });
  assert.deepEqual(back.ext, { runid: "run-1" });

  const body = JSON.stringify({ specversion: "1.0", id: "t-2", source: "cli", type: "io.agentmesh.task.requested", replyto: "mesh.result.A.t-2", data: { b: 2 } });
  const s = decode({ data: new TextEncoder().encode(body) });
  assert.equal(s.id, "t-2");
  assert.equal(s.ext.replyto, "mesh.result.A.t-2");
  assert.deepEqual(s.data, { b: 2 });

  const h = headers();
  h.set("ce-specversion", "1.0");
  h.set("ce-id", "t-3");
  assert.throws(() => decode({ headers: h, data: new Uint8Array() }), /missing source, type/);
});

test("any string survives a header round trip, and decoding bad values only ever throws errors naming the header", () => {
  const pool = ["a", " ", "%", '"', "\\", "é", "€", "😀", "\u0000", "\n", "+", "~", "!", "%2", "%zz"];
  let seed = 7;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  for (let i = 0; i < 2000; i++) {
    let s = "";
    for (let j = rand(12); j > 0; j--) s += pool[rand(pool.length)];
    assert.equal(decodeHeaderValue("ce-x", encodeHeaderValue(s)), s);
    try {
      decodeHeaderValue("ce-x", s);
    } catch (err) {
      assert.match((err as Error).message, /^header ce-x value /);
    }
  }
});
