// signing.ts: signed tasks on a secure mesh (docs/protocol.md, "Signed
// tasks"; docs/security.md, "Who sent a task"). Every agentmesh process
// signs the tasks it sends with its credentials: Agentmesh-Sender carries
// its user JWT, Agentmesh-Signature the Ed25519 signature, by the JWT's
// user key, of the task's digest. An agent checks the JWT was issued by its
// own account signing key, the signature, and that the task's replyto lies
// in the signer's result subjects.

import { createHash, createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { fromPublic, fromSeed, type KeyPair } from "@nats-io/nkeys";
import type { MsgHdrs } from "@nats-io/nats-core";

export const headerSender = "Agentmesh-Sender";
export const headerSignature = "Agentmesh-Signature";

/** Roles of agentmesh identities; a user is named <role>-<name> (admin and orchestrator have no name). */
export type Role = "admin" | "orchestrator" | "client" | "agent";

/** An agentmesh identity: who signed a task. */
export interface Identity {
  role: Role;
  name: string;
}

interface UserClaims {
  iss: string;
  sub: string;
  name: string;
  exp?: number;
  nbf?: number;
  nats?: { issuer_account?: string };
}

const b64url = (b: Uint8Array) => Buffer.from(b).toString("base64url");

/** parseUser reads an identity from a user name ("client-alice", "agent-TextAgent", "orchestrator", "admin"). */
export function parseUser(user: string): Identity {
  const i = user.indexOf("-");
  const role = (i < 0 ? user : user.slice(0, i)) as Role;
  const name = i < 0 ? "" : user.slice(i + 1);
  const named = role === "client" || role === "agent";
  if (!["admin", "orchestrator", "client", "agent"].includes(role) || named !== (name !== "") || (named && !/^[A-Za-z0-9_-]{1,64}$/.test(name))) {
    throw new Error(`user ${JSON.stringify(user)} is no agentmesh identity: want client-<name>, agent-<name>, orchestrator or admin`);
  }
  return { role, name };
}

function decodeJWT(token: string): { claims: UserClaims; signed: Uint8Array; sig: Uint8Array } {
  const parts = token.split(".");
  if (parts.length !== 3) throw new Error("the user JWT does not have three parts");
  const claims = JSON.parse(Buffer.from(parts[1], "base64url").toString("utf8")) as UserClaims;
  return { claims, signed: new TextEncoder().encode(`${parts[0]}.${parts[1]}`), sig: Buffer.from(parts[2], "base64url") };
}

/**
 * taskDigest is what a task's signature covers: the SHA-256 of its subject,
 * a zero byte, its ce-* headers and Content-Type sorted by name (each name,
 * a zero byte, each value, a zero byte), a zero byte and its data.
 */
export function taskDigest(subject: string, headers: MsgHdrs | undefined, data: Uint8Array): Uint8Array {
  const h = createHash("sha256");
  const zero = Buffer.from([0]);
  h.update(subject);
  h.update(zero);
  const keys = headers ? [...headers.keys()].filter((k) => k.toLowerCase().startsWith("ce-") || k === "Content-Type").sort() : [];
  for (const k of keys) {
    h.update(k);
    h.update(zero);
    for (const v of headers!.values(k)) {
      h.update(v);
      h.update(zero);
    }
  }
  h.update(zero);
  h.update(data);
  return h.digest();
}

/** taskTag returns base-<tag>: the first 16 characters of the HMAC-SHA256 of base keyed with key, in lower-case base32 (Go: schemas.TaskTag). */
export function taskTag(base: string, key: string): string {
  if (!key) return base;
  const mac = createHmac("sha256", key).update(base).digest();
  const alphabet = "abcdefghijklmnopqrstuvwxyz234567";
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of mac) {
    value = ((value << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5 && out.length < 16) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return `${base}-${out}`;
}

/** Credentials are an agentmesh identity's user JWT and key, from its credentials file. */
export class Credentials {
  readonly identity: Identity;
  private readonly kp: KeyPair;
  private readonly issuer: string;
  private readonly account: string;
  private readonly senders = new Map<string, { id: Identity; key: KeyPair }>();

  private constructor(
    private readonly token: string,
    seed: string,
    source: string,
  ) {
    const { claims } = decodeJWT(token);
    this.identity = parseUser(claims.name);
    this.kp = fromSeed(new TextEncoder().encode(seed));
    this.issuer = claims.iss;
    this.account = claims.nats?.issuer_account || "";
    if (!this.issuer) throw new Error(`credentials ${source}: the user JWT names no issuer`);
  }

  /** fromText reads credentials in the decorated format `agentmesh creds` writes. */
  static fromText(text: string, source = "(text)"): Credentials {
    const jwt = /-----BEGIN NATS USER JWT-----\s*([A-Za-z0-9_.-]+)\s*------END NATS USER JWT------/.exec(text);
    const seed = /-----BEGIN USER NKEY SEED-----\s*(SU[A-Z2-7]+)\s*------END USER NKEY SEED------/.exec(text);
    if (!jwt || !seed) throw new Error(`credentials ${source}: want a user JWT and a user seed, as agentmesh creds writes them`);
    return new Credentials(jwt[1], seed[1], source);
  }

  /** fromFile reads a credentials file. */
  static fromFile(path: string): Credentials {
    return Credentials.fromText(readFileSync(path, "utf8"), path);
  }

  /** sign sets the sender headers of a task message; sign it last, a header or byte changed after breaks it. */
  sign(subject: string, headers: MsgHdrs, data: Uint8Array): void {
    const sig = this.kp.sign(taskDigest(subject, headers, data));
    headers.set(headerSender, this.token);
    headers.set(headerSignature, b64url(sig));
  }

  /**
   * sender returns who signed a task message. It throws unless the message
   * carries a JWT issued by the same account signing key as these
   * credentials', for the same account, unexpired, and a valid signature
   * of its digest by that JWT's user key.
   */
  sender(subject: string, headers: MsgHdrs | undefined, data: Uint8Array): Identity {
    const token = headers?.get(headerSender) || "";
    const sigText = headers?.get(headerSignature) || "";
    if (!token || !sigText) {
      throw new Error(`task not signed by an identity of this mesh: send it with agentmesh credentials (headers ${headerSender} and ${headerSignature})`);
    }
    let s = this.senders.get(token);
    if (!s) {
      let decoded;
      try {
        decoded = decodeJWT(token);
      } catch (err) {
        throw new Error(`task not signed by an identity of this mesh: the sender JWT: ${(err as Error).message}`);
      }
      const { claims, signed, sig } = decoded;
      const now = Date.now() / 1000;
      let issuerOK = false;
      try {
        issuerOK = claims.iss === this.issuer && fromPublic(claims.iss).verify(signed, sig);
      } catch {
        issuerOK = false;
      }
      if (!issuerOK || (claims.nats?.issuer_account || "") !== this.account || (claims.exp && claims.exp < now) || (claims.nbf && claims.nbf > now)) {
        throw new Error(`task not signed by an identity of this mesh: the sender JWT of ${JSON.stringify(claims.name)} was not issued by this mesh's account signing key, or has expired`);
      }
      s = { id: parseUser(claims.name), key: fromPublic(claims.sub) };
      if (this.senders.size >= 1024) this.senders.clear();
      this.senders.set(token, s);
    }
    let ok = false;
    try {
      ok = s.key.verify(taskDigest(subject, headers, data), Buffer.from(sigText, "base64url"));
    } catch {
      ok = false;
    }
    if (!ok) throw new Error(`task not signed by an identity of this mesh: the signature of ${userOf(s.id)} does not match the task`);
    return s.id;
  }
}

/** userOf spells an identity as its user name. */
export function userOf(id: Identity): string {
  return id.name ? `${id.role}-${id.name}` : id.role;
}

/** envCredentials returns the credentials of NATS_CREDS when it names an agentmesh identity's file, else undefined. */
export function envCredentials(): Credentials | undefined {
  return process.env.NATS_CREDS ? Credentials.fromFile(process.env.NATS_CREDS) : undefined;
}
