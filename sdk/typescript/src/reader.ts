// reader.ts: reading one subject of a stream from its start (or a time)
// with an ephemeral consumer whose filter is part of its create subject
// ($JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>), the only form a
// secure mesh lets a client or an agent use on MESH_RESULTS.

import { randomBytes } from "node:crypto";
import type { NatsConnection } from "@nats-io/nats-core";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type JsMsg } from "@nats-io/jetstream";
import { nanos } from "@nats-io/nats-core";

/** A reader of one subject of one stream. */
export interface SubjectReader {
  /** next returns the next message, or null when none came within waitMs */
  next(waitMs: number): Promise<JsMsg | null>;
  /** close deletes the consumer; safe to call twice */
  close(): Promise<void>;
}

/** openReader makes an ephemeral consumer of stream filtered on subject, from the start or from since. */
export async function openReader(nc: NatsConnection, stream: string, subject: string, since?: Date): Promise<SubjectReader> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const name = `sdk_${randomBytes(8).toString("hex")}`;
  await jsm.consumers.add(stream, {
    name,
    filter_subject: subject,
    ack_policy: AckPolicy.None,
    mem_storage: true,
    inactive_threshold: nanos(60_000),
    ...(since ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: since.toISOString() } : { deliver_policy: DeliverPolicy.All }),
  });
  const consumer = await jetstream(nc, { checkAPI: false }).consumers.get(stream, name);
  let closed = false;
  return {
    next: (waitMs: number) => consumer.next({ expires: Math.max(1000, Math.min(30_000, waitMs)) }),
    close: async () => {
      if (closed) return;
      closed = true;
      await jsm.consumers.delete(stream, name).catch(() => undefined);
    },
  };
}
