// signed.js: who sent a task, on a secure mesh (docs/protocol.md, "Signed
// tasks"; docs/security.md, "Who sent a task"). Every agentmesh process
// signs the tasks it sends: Agentmesh-Sender carries its user JWT and
// Agentmesh-Signature the Ed25519 signature, by that JWT's user key, of the
// task's digest. An agent checks that the JWT was issued by the same account
// signing key as its own, the signature, and that the task's replyto lies in
// the signer's result subjects, as the Go runtime does (bus.Credentials,
// agents/sender.go).

import { createHash, createPublicKey, verify } from "node:crypto";
import { readFileSync } from "node:fs";

export const headerSender = "Agentmesh-Sender";
export const headerSignature = "Agentmesh-Signature";

// ErrUnsigned's text in the Go runtime: a task whose sender cannot be told.
const unsigned = "task not signed by an identity of this mesh";

// decodeJWT returns the claims of a NATS JWT and checks its signature by
// its issuer (an nkey): header.payload signed with ed25519.
function decodeJWT(token) {
  const parts = String(token).split(".");
  if (parts.length !== 3) throw new Error("not a JWT");
  const header = JSON.parse(Buffer.from(parts[0], "base64url").toString());
  if (header.alg !== "ed25519-nkey" && header.alg !== "ed25519") throw new Error(`not supported type "${header.alg || ""}"`);
  const claims = JSON.parse(Buffer.from(parts[1], "base64url").toString());
  const sig = Buffer.from(parts[2], "base64url");
  if (!verify(null, Buffer.from(`${parts[0]}.${parts[1]}`), nkeyPublic(claims.iss), sig)) {
    throw new Error("the JWT's signature does not check");
  }
  return claims;
}

// nkeyPublic returns the Ed25519 public key of a public nkey (base32 of a
// prefix byte, the 32-byte key and a CRC-16).
function nkeyPublic(nkey) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = 0;
  let value = 0;
  const out = [];
  for (const c of String(nkey)) {
    const i = alphabet.indexOf(c);
    if (i < 0) throw new Error(`"${nkey}" is not an nkey`);
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  if (out.length !== 35) throw new Error(`"${nkey}" is not a public nkey`);
  const x = Buffer.from(out.slice(1, 33)).toString("base64url");
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x }, format: "jwk" });
}

// taskDigest is what a task's signature covers: the SHA-256 of its subject,
// its ce-* headers and Content-Type sorted by name (each name, then each
// value, each followed by a zero byte), and its data (bus.TaskDigest).
export function taskDigest(msg) {
  const h = createHash("sha256");
  const zero = Buffer.from([0]);
  h.update(msg.subject);
  h.update(zero);
  const keys = msg.headers ? [...msg.headers.keys()].filter((k) => k.toLowerCase().startsWith("ce-") || k === "Content-Type") : [];
  keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  for (const k of keys) {
    h.update(k);
    h.update(zero);
    for (const v of msg.headers.values(k)) {
      h.update(v);
      h.update(zero);
    }
  }
  h.update(zero);
  h.update(msg.data || new Uint8Array());
  return h.digest();
}

// parseUser is bus.ParseUser: "client-alice" -> { role, name }.
function parseUser(user) {
  const s = String(user || "");
  const i = s.indexOf("-");
  const role = i < 0 ? s : s.slice(0, i);
  const name = i < 0 ? "" : s.slice(i + 1);
  const named = role === "agent" || role === "client";
  if (!["admin", "orchestrator", "agent", "client"].includes(role) || named !== (name !== "")) {
    throw new Error(`user "${s}" is no agentmesh identity`);
  }
  return { role, name, user: s };
}

// Senders checks the senders of tasks against this process's own
// credentials file (NATS_CREDS). new Senders() on a plain mesh (no
// credentials) checks nothing: senderOf answers null.
export class Senders {
  constructor(credsFile = process.env.NATS_CREDS) {
    this.secure = !!credsFile;
    this.cache = new Map(); // verified sender JWT -> { id, key }
    if (!this.secure) return;
    const m = /-----BEGIN NATS USER JWT-----\s*([A-Za-z0-9_.-]+)\s*------END NATS USER JWT------/.exec(readFileSync(credsFile, "utf8"));
    if (!m) throw new Error("NATS_CREDS: no user JWT in the credentials file");
    const own = decodeJWT(m[1]);
    this.issuer = own.iss; // the account signing key the server trusts
    this.account = own.nats && own.nats.issuer_account;
  }

  // senderOf returns the identity ({ role, name, user }) that signed task
  // message msg, or throws an Error whose message starts with the Go
  // runtime's "task not signed by an identity of this mesh". null on a
  // plain mesh.
  senderOf(msg) {
    if (!this.secure) return null;
    const token = msg.headers && msg.headers.get(headerSender);
    const sigText = msg.headers && msg.headers.get(headerSignature);
    const sig = sigText ? Buffer.from(sigText, "base64url") : Buffer.alloc(0);
    if (!token || sig.length === 0) {
      throw new Error(`${unsigned}: send it with agentmesh credentials (headers ${headerSender} and ${headerSignature})`);
    }
    const s = this.verifiedSender(token);
    if (!verify(null, taskDigest(msg), s.key, sig)) {
      throw new Error(`${unsigned}: the signature of ${s.id.user} does not match the task`);
    }
    return s.id;
  }

  verifiedSender(token) {
    const hit = this.cache.get(token);
    if (hit) return hit;
    let claims;
    try {
      claims = decodeJWT(token);
    } catch (err) {
      throw new Error(`${unsigned}: the sender JWT: ${err.message}`);
    }
    const now = Math.floor(Date.now() / 1000);
    const expired = (claims.exp && claims.exp < now) || (claims.nbf && claims.nbf > now);
    const account = claims.nats && claims.nats.issuer_account;
    if (expired || claims.iss !== this.issuer || account !== this.account || (claims.nats && claims.nats.type !== "user")) {
      throw new Error(`${unsigned}: the sender JWT of "${claims.name}" was not issued by this mesh's account signing key, or has expired`);
    }
    let s;
    try {
      s = { id: parseUser(claims.name), key: nkeyPublic(claims.sub) };
    } catch (err) {
      throw new Error(`${unsigned}: ${err.message}`);
    }
    if (this.cache.size >= 1024) this.cache.clear();
    this.cache.set(token, s);
    return s;
  }
}

// senderSpace returns the result subjects identity id may name as the
// replyto of a task for agent: ...client.<client>. for a client,
// ...agent.<caller>. for an agent, "" (any of the agent's) for the
// orchestrator and admin.
export function senderSpace(n, agent, id) {
  if (id.role === "client") return `${n.agentResults(agent)}client.${id.name}.`;
  if (id.role === "agent") return `${n.agentResults(agent)}agent.${id.name}.`;
  return "";
}
