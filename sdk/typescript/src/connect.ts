// connect.ts: the connection options every agentmesh process uses, from
// the environment.

import { readFileSync } from "node:fs";
import { credsAuthenticator, type ConnectionOptions } from "@nats-io/nats-core";

/**
 * connectOptions returns options for connect() of @nats-io/transport-node:
 * NATS_URL (nats://127.0.0.1:4222), and on a secure mesh NATS_CREDS (a
 * credentials file from `agentmesh creds ...`; the inbox prefix becomes
 * _INBOX.<the name in its user JWT>, the only replies a secure mesh lets
 * it read) and NATS_CA (the CA certificate to trust).
 */
export function connectOptions(name: string): ConnectionOptions {
  const opts: ConnectionOptions = { servers: process.env.NATS_URL || "nats://127.0.0.1:4222", name };
  if (process.env.NATS_CREDS) {
    const creds = readFileSync(process.env.NATS_CREDS);
    opts.authenticator = credsAuthenticator(creds);
    opts.inboxPrefix = `_INBOX.${credsName(creds.toString(), process.env.NATS_CREDS)}`;
  }
  if (process.env.NATS_CA) opts.tls = { caFile: process.env.NATS_CA };
  return opts;
}

function credsName(text: string, file: string): string {
  const m = /-----BEGIN NATS USER JWT-----\s*([A-Za-z0-9_.-]+)\s*------END NATS USER JWT------/.exec(text);
  if (!m) throw new Error(`NATS_CREDS ${file}: no user JWT in the credentials file; make one with agentmesh creds`);
  const claims = JSON.parse(Buffer.from(m[1].split(".")[1], "base64url").toString());
  return claims.name;
}
