// binding.js: header values of the CloudEvents NATS protocol binding (binary
// mode, section 3.1.3.2 "NATS Header Values"), on top of the cloudevents
// SDK. The SDK maps attributes to ce- headers (its HTTP binding) but leaves
// their values as they are; the NATS binding asks a sender to percent-encode
// them and a receiver to unquote and percent-decode them, rejecting bytes
// that are not UTF-8.

import { headers } from "@nats-io/transport-node";
import { HTTP } from "cloudevents";

const utf8 = new TextEncoder();
const strictUTF8 = new TextDecoder("utf-8", { fatal: true });

function pct(b, upper) {
  const h = b.toString(16).padStart(2, "0");
  return "%" + (upper ? h.toUpperCase() : h);
}

// encodeValue percent-encodes what the binding names: space, double quote,
// percent and every byte outside printable ASCII, with upper-case hex.
// encodeValue("Euro € 😀") is "Euro%20%E2%82%AC%20%F0%9F%98%80".
export function encodeValue(s) {
  let out = "";
  for (const b of utf8.encode(s)) {
    out += b > 0x20 && b < 0x7f && b !== 0x22 && b !== 0x25 ? String.fromCharCode(b) : pct(b, true);
  }
  return out;
}

// encodeEverything is a sender that encodes far more than it must: every
// byte but letters and digits, in lower-case hex (so ':' in a time becomes
// %3a). A receiver must accept it.
export function encodeEverything(s) {
  let out = "";
  for (const b of utf8.encode(s)) {
    const c = String.fromCharCode(b);
    out += /^[A-Za-z0-9]$/.test(c) ? c : pct(b, false);
  }
  return out;
}

// unquote reads an RFC 7230 quoted-string making up the whole value.
function unquote(v) {
  let out = "";
  for (let i = 1; i < v.length; i++) {
    const c = v[i];
    if (c === "\\") {
      if (i + 1 >= v.length) throw new Error(`header value ${JSON.stringify(v)} ends in a backslash inside its quotes`);
      out += v[++i];
    } else if (c === '"') {
      if (i !== v.length - 1) throw new Error(`header value ${JSON.stringify(v)} has text after its closing quote`);
      return out;
    } else {
      out += c;
    }
  }
  throw new Error(`header value ${JSON.stringify(v)} opens a quoted string that does not end`);
}

// decodeValue undoes what a sender did: optional whitespace is dropped, a
// double-quoted value unquoted, then one round of percent-decoding (either
// case of hex); the bytes must be UTF-8 (%C0%A0, an overlong space, throws).
export function decodeValue(v) {
  v = v.replace(/^[ \t]+|[ \t]+$/g, "");
  if (v.startsWith('"')) v = unquote(v);
  const raw = utf8.encode(v);
  const out = [];
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] !== 0x25) {
      out.push(raw[i]);
      continue;
    }
    const hex = String.fromCharCode(raw[i + 1] ?? 0x20, raw[i + 2] ?? 0x20);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) throw new Error(`header value ${JSON.stringify(v)}: "%${hex.trim()}" is not a percent-encoded byte`);
    out.push(parseInt(hex, 16));
    i += 2;
  }
  try {
    return strictUTF8.decode(Uint8Array.from(out));
  } catch {
    throw new Error(`header value ${JSON.stringify(v)} decodes to bytes that are not valid UTF-8`);
  }
}

// toNatsMsg encodes a CloudEvent in binary mode with the SDK's header
// mapping and the binding's value encoding (encode: encodeValue by default).
// Returns { headers, data } for publish options.
export function toNatsMsg(event, encode = encodeValue) {
  const m = HTTP.binary(event);
  const h = headers();
  for (const [k, v] of Object.entries(m.headers)) {
    if (v === undefined || v === "") continue;
    const lk = k.toLowerCase();
    if (lk === "content-type") h.set("Content-Type", String(v));
    else h.set(lk, lk.startsWith("ce-") ? encode(String(v)) : String(v));
  }
  const body = typeof m.body === "string" ? m.body : JSON.stringify(m.body ?? null);
  return { headers: h, data: utf8.encode(body) };
}

// fromNatsMsg decodes a binary-mode NATS message: every ce- header value is
// decoded (decodeValue throws on a bad one), then the SDK builds the event.
export function fromNatsMsg(msg) {
  const h = {};
  for (const k of msg.headers ? msg.headers.keys() : []) {
    const lk = k.toLowerCase();
    const v = msg.headers.get(k);
    h[lk] = lk.startsWith("ce-") ? decodeValue(v) : v;
  }
  return HTTP.toEvent({ headers: h, body: new TextDecoder().decode(msg.data) });
}
