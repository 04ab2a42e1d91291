// mesh.js: the few pieces of the agentmesh wire contract (docs/protocol.md)
// that both the agent and the client need: names, CloudEvents over NATS
// messages, and the project's JSON Schemas.

import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { headers, credsAuthenticator } from "@nats-io/transport-node";
import { CloudEvent, HTTP } from "cloudevents";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const here = dirname(fileURLToPath(import.meta.url));

// Names of subjects, streams and buckets for one prefix: AGENTMESH_PREFIX,
// as the Go side reads it, or the older MESH_PREFIX, or "mesh".
export function names(prefix = process.env.AGENTMESH_PREFIX || process.env.MESH_PREFIX || "mesh") {
  const upper = prefix.toUpperCase();
  return {
    prefix,
    task: (agent) => `${prefix}.task.${agent}`,
    // Every result subject starts with the agent the task went to; on a
    // secure mesh only that agent may publish there.
    result: (agent, taskID) => `${prefix}.result.${agent}.${taskID}`,
    agentResults: (agent) => `${prefix}.result.${agent}.`,
    events: (id, kind) => `${prefix}.events.${id}.${kind}`,
    eventsOf: (id) => `${prefix}.events.${id}.>`,
    announce: (agent) => `${prefix}.registry.announce.${agent}`,
    depart: (agent) => `${prefix}.registry.depart.${agent}`,
    registryQuery: `${prefix}.registry.query`,
    chatRequest: `${prefix}.chat.request`,
    pipelineSubmit: `${prefix}.pipeline.submit`,
    control: (agent) => `${prefix}.control.${agent}`,
    dead: (agent) => `${prefix}.dead.${agent}`,
    // Where, on a secure mesh, an agent posts the refusal of a task it can
    // answer on no result subject; every identity may read it.
    deadRefused: (agent) => `${prefix}.dead.${agent}.refused`,
    tasksStream: `${upper}_TASKS`,
    eventsStream: `${upper}_EVENTS`,
    agentsBucket: `${prefix}_agents`,
    conversationsBucket: `${prefix}_conversations`,
    filesStore: `${prefix}_files`,
  };
}

// connectOptions are the options every process here connects with:
// NATS_URL, and on a secure mesh (agentmesh server --secure) NATS_CREDS, a
// credentials file from `agentmesh creds ...`, and NATS_CA, the CA
// certificate to trust. A secure mesh lets an identity read replies only on
// its own inbox prefix, _INBOX.<the name in its user JWT>.
export function connectOptions(name) {
  const opts = { servers: process.env.NATS_URL || "nats://127.0.0.1:4222", name };
  if (process.env.NATS_CREDS) {
    const creds = readFileSync(process.env.NATS_CREDS);
    opts.authenticator = credsAuthenticator(creds);
    opts.inboxPrefix = `_INBOX.${credsName(creds.toString())}`;
  }
  if (process.env.NATS_CA) opts.tls = { caFile: process.env.NATS_CA };
  return opts;
}

// credsName returns the name in the user JWT of a credentials file.
function credsName(text) {
  const m = /-----BEGIN NATS USER JWT-----\s*([A-Za-z0-9_.-]+)\s*------END NATS USER JWT------/.exec(text);
  if (!m) throw new Error("NATS_CREDS: no user JWT in the credentials file");
  const claims = JSON.parse(Buffer.from(m[1].split(".")[1], "base64url").toString());
  return claims.name;
}

// Event types of the wire contract.
export const types = {
  agentAnnounced: "io.agentmesh.agent.announced",
  agentDeparted: "io.agentmesh.agent.departed",
  taskRequested: "io.agentmesh.task.requested",
  taskCompleted: "io.agentmesh.task.completed",
  taskFailed: "io.agentmesh.task.failed",
  taskProgress: "io.agentmesh.task.progress",
  chatRequested: "io.agentmesh.chat.requested",
  chatProgress: "io.agentmesh.chat.progress",
  chatResponded: "io.agentmesh.chat.responded",
};

// An id usable as one subject token and KV key.
export const tokenRE = /^[A-Za-z0-9_=-]{1,128}$/;

// toMsg encodes a CloudEvent in binary mode (what the mesh emits): every
// attribute a ce- header, the data content type the Content-Type header,
// the data the body. Returns { headers, data } for publish options.
export function toMsg(event) {
  const m = HTTP.binary(event);
  const h = headers();
  for (const [k, v] of Object.entries(m.headers)) {
    if (v === undefined || v === "") continue;
    h.set(k === "content-type" ? "Content-Type" : k, String(v));
  }
  const body = typeof m.body === "string" ? m.body : JSON.stringify(m.body ?? null);
  return { headers: h, data: new TextEncoder().encode(body) };
}

// fromMsg decodes a CloudEvent from a NATS message in either mode: binary
// (ce- headers) or structured (Content-Type application/cloudevents+json).
// It throws on a malformed event; rawAttrs reads what it can anyway.
export function fromMsg(msg) {
  const h = {};
  if (msg.headers) {
    for (const k of msg.headers.keys()) h[k.toLowerCase()] = msg.headers.get(k);
  }
  const body = new TextDecoder().decode(msg.data);
  if (!h["content-type"] && !h["ce-specversion"] && body.trimStart().startsWith("{")) {
    h["content-type"] = "application/cloudevents+json"; // structured without a Content-Type
  }
  return HTTP.toEvent({ headers: h, body });
}

// rawAttrs returns the id and replyto of a message that may not decode.
export function rawAttrs(msg) {
  const out = { id: "", replyto: "" };
  if (msg.headers) {
    for (const k of msg.headers.keys()) {
      const lk = k.toLowerCase();
      if (lk === "ce-id") out.id = msg.headers.get(k);
      if (lk === "ce-replyto") out.replyto = msg.headers.get(k);
    }
  }
  if (!out.id) {
    try {
      const j = JSON.parse(new TextDecoder().decode(msg.data));
      out.id = typeof j.id === "string" ? j.id : "";
      out.replyto = typeof j.replyto === "string" ? j.replyto : "";
    } catch {
      // not JSON: nothing more to read
    }
  }
  return out;
}

// newEvent builds a CloudEvent with JSON data and the given extensions.
export function newEvent(type, source, data, ext = {}) {
  const attrs = { type, source, datacontenttype: "application/json", data };
  for (const [k, v] of Object.entries(ext)) if (v) attrs[k] = v;
  return new CloudEvent(attrs);
}

// Schemas loads every JSON Schema of the project (schemas/json, or
// AGENTMESH_SCHEMAS) into one Ajv instance, by $id, and validates documents
// by the names the Go code uses: "task", "result", "types/FILE_IDS", ...
export class Schemas {
  constructor(dir = process.env.AGENTMESH_SCHEMAS || join(here, "..", "..", "schemas", "json")) {
    this.ajv = new Ajv2020({ allErrors: true, strict: false });
    addFormats(this.ajv);
    this.base = "";
    const load = (sub) => {
      for (const f of readdirSync(join(dir, sub))) {
        if (!f.endsWith(".schema.json")) continue;
        const doc = JSON.parse(readFileSync(join(dir, sub, f), "utf8"));
        this.ajv.addSchema(doc);
        if (!this.base && sub === "") this.base = doc.$id.slice(0, doc.$id.lastIndexOf("/") + 1);
      }
    };
    load("");
    load("types");
  }

  // validate returns a list of "field: problem" strings, empty when doc is valid.
  validate(name, doc) {
    const v = this.ajv.getSchema(`${this.base}${name}.schema.json`);
    if (!v) return [`no schema called ${name}`];
    return v(doc) ? [] : v.errors.map((e) => `${e.instancePath || "(document)"}: ${e.message}`);
  }

  // declare adds the schema of a data type the agent declares in its
  // contract (data_types), so values of it validate like a built-in type's.
  declare(def) {
    this.ajv.addSchema(def.schema === undefined ? true : def.schema, `${this.base}types/${def.name}.schema.json`);
  }

  // hasType reports whether a data type has a schema (a built-in type).
  hasType(dataType) {
    return !!this.ajv.getSchema(`${this.base}types/${dataType}.schema.json`);
  }

  // compile compiles a free-standing schema (a contract's params).
  compile(schema) {
    return this.ajv.compile(schema);
  }
}
