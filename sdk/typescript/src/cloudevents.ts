// cloudevents.ts: CloudEvents 1.0 on NATS messages (docs/protocol.md,
// "CloudEvents on NATS"). Events are sent in binary mode (ce- headers,
// percent-encoded values) and read in binary or structured mode.

import { randomUUID } from "node:crypto";
import { headers as newHeaders, type MsgHdrs } from "@nats-io/nats-core";

/** A CloudEvent with JSON data; extensions are plain string attributes. */
export interface MeshEvent<T = unknown> {
  specversion: string;
  id: string;
  source: string;
  type: string;
  time?: string;
  subject?: string;
  datacontenttype?: string;
  data?: T;
  /** extension attributes: taskid, replyto, deadline, runid, stepid, conversationid, traceparent, calldepth, maxcalldepth, owner, ... */
  ext: Record<string, string>;
}

/** The message parts of an encoded event, ready for publish options. */
export interface Encoded {
  headers: MsgHdrs;
  data: Uint8Array;
}

const coreAttrs = new Set(["specversion", "id", "source", "type", "time", "subject", "datacontenttype", "dataschema", "data", "data_base64"]);
const extName = /^[a-z0-9]{1,20}$/;

/** newEvent builds an event with a fresh id and the current time; empty extensions are left out. */
export function newEvent<T>(type: string, source: string, data: T, ext: Record<string, string | undefined> = {}, id: string = randomUUID()): MeshEvent<T> {
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(ext)) if (v) clean[k] = v;
  return { specversion: "1.0", id, source, type, time: new Date().toISOString(), datacontenttype: "application/json", data, ext: clean };
}

/**
 * encodeHeaderValue percent-encodes a ce- header value as the CloudEvents
 * NATS binding asks: a space, '"', '%' and every byte outside '!'..'~'.
 */
export function encodeHeaderValue(s: string): string {
  let out = "";
  for (const b of new TextEncoder().encode(s)) {
    if (b === 0x20 || b === 0x22 || b === 0x25 || b < 0x21 || b > 0x7e) out += "%" + b.toString(16).toUpperCase().padStart(2, "0");
    else out += String.fromCharCode(b);
  }
  return out;
}

/** decodeHeaderValue undoes encodeHeaderValue (and quoted strings); it throws naming the header on bad input. */
export function decodeHeaderValue(name: string, raw: string): string {
  let v = raw.replace(/^[ \t]+|[ \t]+$/g, "");
  if (v.startsWith('"')) {
    let out = "";
    let i = 1;
    for (; i < v.length; i++) {
      const c = v[i];
      if (c === "\\" && i + 1 < v.length) {
        out += v[++i];
      } else if (c === '"') {
        break;
      } else {
        out += c;
      }
    }
    if (i >= v.length) throw new Error(`header ${name} value ${JSON.stringify(raw)}: the quoted string does not end`);
    if (i !== v.length - 1) throw new Error(`header ${name} value ${JSON.stringify(raw)}: text after the closing quote`);
    v = out;
  }
  if (!v.includes("%")) return v;
  const bytes: number[] = [];
  const enc = new TextEncoder();
  for (let i = 0; i < v.length; i++) {
    if (v[i] === "%") {
      const hex = v.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) throw new Error(`header ${name} value ${JSON.stringify(raw)}: '%' must be followed by two hex digits`);
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...enc.encode(v[i]));
    }
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(bytes));
  } catch {
    throw new Error(`header ${name} value ${JSON.stringify(raw)}: the bytes are not valid UTF-8`);
  }
}

/** encode puts an event on a message in binary mode, as the mesh emits events. */
export function encode(ev: MeshEvent, extra?: Record<string, string>): Encoded {
  const h = newHeaders();
  h.set("ce-specversion", ev.specversion || "1.0");
  h.set("ce-id", encodeHeaderValue(ev.id));
  h.set("ce-source", encodeHeaderValue(ev.source));
  h.set("ce-type", encodeHeaderValue(ev.type));
  if (ev.time) h.set("ce-time", encodeHeaderValue(ev.time));
  if (ev.subject) h.set("ce-subject", encodeHeaderValue(ev.subject));
  h.set("Content-Type", ev.datacontenttype || "application/json");
  for (const [k, v] of Object.entries(ev.ext)) if (v) h.set(`ce-${k}`, encodeHeaderValue(v));
  for (const [k, v] of Object.entries(extra || {})) h.set(k, v);
  const data = ev.data === undefined ? new Uint8Array() : new TextEncoder().encode(JSON.stringify(ev.data));
  return { headers: h, data };
}

/** The headers of a message by lower-case name. */
export function headerMap(h?: MsgHdrs): Map<string, string> {
  const m = new Map<string, string>();
  if (!h) return m;
  for (const k of h.keys()) m.set(k.toLowerCase(), h.get(k));
  return m;
}

/**
 * decode reads an event from a message in binary mode (ce- headers) or
 * structured mode (Content-Type application/cloudevents+json, or a JSON
 * body with a specversion and no ce- headers). It throws an error that
 * names what is wrong.
 */
export function decode(msg: { headers?: MsgHdrs; data: Uint8Array }): MeshEvent {
  const h = headerMap(msg.headers);
  const body = new TextDecoder().decode(msg.data);
  const ct = h.get("content-type") || "";
  let ev: MeshEvent;
  if (h.has("ce-specversion") || (!ct.startsWith("application/cloudevents+json") && !body.trimStart().startsWith("{"))) {
    const attr = (k: string) => (h.has(`ce-${k}`) ? decodeHeaderValue(`ce-${k}`, h.get(`ce-${k}`)!) : undefined);
    ev = { specversion: attr("specversion") || "", id: attr("id") || "", source: attr("source") || "", type: attr("type") || "", ext: {} };
    const time = attr("time");
    if (time) ev.time = time;
    const subject = attr("subject");
    if (subject) ev.subject = subject;
    ev.datacontenttype = ct || undefined;
    for (const [k] of h) {
      if (!k.startsWith("ce-")) continue;
      const name = k.slice(3);
      if (!coreAttrs.has(name)) ev.ext[name] = attr(name)!;
    }
    if (body.trim() !== "") {
      try {
        ev.data = JSON.parse(body);
      } catch (err) {
        throw new Error(`event data is not JSON: ${(err as Error).message}`);
      }
    }
  } else {
    let j: Record<string, unknown>;
    try {
      j = JSON.parse(body);
    } catch (err) {
      throw new Error(`structured event is not JSON: ${(err as Error).message}`);
    }
    if (typeof j !== "object" || j === null || Array.isArray(j)) throw new Error("structured event is not a JSON object");
    const str = (k: string) => (typeof j[k] === "string" ? (j[k] as string) : undefined);
    ev = { specversion: str("specversion") || "", id: str("id") || "", source: str("source") || "", type: str("type") || "", ext: {} };
    if (str("time")) ev.time = str("time");
    if (str("subject")) ev.subject = str("subject");
    if (str("datacontenttype")) ev.datacontenttype = str("datacontenttype");
    if ("data" in j) ev.data = j.data;
    else if (typeof j.data_base64 === "string") ev.data = JSON.parse(Buffer.from(j.data_base64, "base64").toString("utf8"));
    for (const [k, v] of Object.entries(j)) {
      if (coreAttrs.has(k)) continue;
      if (!extName.test(k)) throw new Error(`extension attribute ${JSON.stringify(k)}: names are 1 to 20 lower-case letters and digits`);
      ev.ext[k] = typeof v === "string" ? v : JSON.stringify(v);
    }
  }
  const missing = ["specversion", "id", "source", "type"].filter((k) => !(ev as unknown as Record<string, string>)[k]);
  if (missing.length) throw new Error(`not a CloudEvent: missing ${missing.join(", ")}`);
  if (ev.specversion !== "1.0") throw new Error(`specversion ${JSON.stringify(ev.specversion)}: only 1.0 is read`);
  return ev;
}

/** rawAttrs reads the id and replyto of a message that may not decode. */
export function rawAttrs(msg: { headers?: MsgHdrs; data: Uint8Array }): { id: string; replyto: string } {
  const h = headerMap(msg.headers);
  const safe = (k: string) => {
    try {
      return h.has(k) ? decodeHeaderValue(k, h.get(k)!) : "";
    } catch {
      return "";
    }
  };
  const out = { id: safe("ce-id"), replyto: safe("ce-replyto") };
  if (!out.id) {
    try {
      const j = JSON.parse(new TextDecoder().decode(msg.data));
      if (typeof j.id === "string") out.id = j.id;
      if (typeof j.replyto === "string") out.replyto = j.replyto;
    } catch {
      // not JSON: nothing more to read
    }
  }
  return out;
}
