// client.ts: the client side of the mesh: send a task (durable or direct),
// cancel it, take a chat turn, submit and follow a pipeline, answer its
// approval and input steps, and list the live agents.

import { randomUUID } from "node:crypto";
import type { Msg, NatsConnection } from "@nats-io/nats-core";
import { jetstream, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";

import { decode, encode, newEvent, type MeshEvent } from "./cloudevents.js";
import { Codes, MeshError } from "./errors.js";
import { openReader } from "./reader.js";
import { EventTypes, Names, agentNamePattern, idPattern } from "./names.js";
import { envCredentials, type Credentials } from "./signing.js";
import type { AgentResult, Announcement, ChatDelta, ChatResponse, PipelineSpec, Resolution, RunEvent, TaskRequest } from "./types.gen.js";

/** Options of a client. */
export interface ClientOptions {
  /** the deployment's prefix (AGENTMESH_PREFIX, else "mesh") */
  prefix?: string;
  /**
   * the client's name on a secure mesh (the name in its credentials): it
   * then sends requests on its own subjects and reads its direct calls'
   * results under mesh.result.<agent>.client.<client>.
   */
  client?: string;
  /** the source attribute of the events it sends ("/agentmesh/sdk/typescript") */
  source?: string;
  /**
   * on a secure mesh, the client's credentials (by default those of the
   * NATS_CREDS file, when set): its tasks are signed with them, and a
   * client identity's name becomes client. null turns signing off.
   */
  credentials?: Credentials | null;
}

/** Options of one task. */
export interface TaskOptions {
  /** the task id (a random one) */
  id?: string;
  /** how long to wait for the result, in ms (the task's timeout_ms plus 10 s, else 60 s) */
  waitMs?: number;
  /** a deadline for the task (RFC 3339 time or Date) */
  deadline?: string | Date;
  traceparent?: string;
  signal?: AbortSignal;
}

/** A result and the event that carried it. */
export interface TaskOutcome {
  result: AgentResult;
  event: MeshEvent<AgentResult>;
}

/** An event of a run or a conversation, as followed on mesh.events.<id>.>. */
export type Listener = (ev: MeshEvent) => void;

/** A piece of the text a chat turn's model writes (mesh.delta.<conversation>). */
export type DeltaListener = (d: ChatDelta) => void;

/** MeshClient sends work to a mesh. */
export class MeshClient {
  readonly names: Names;
  private readonly js: JetStreamClient;
  private readonly client?: string;
  private readonly source: string;
  private readonly creds?: Credentials;

  constructor(
    private readonly nc: NatsConnection,
    opts: ClientOptions = {},
  ) {
    this.names = new Names(opts.prefix);
    this.js = jetstream(nc, { checkAPI: false });
    if (opts.client !== undefined && !agentNamePattern.test(opts.client)) {
      throw new Error(`client name ${JSON.stringify(opts.client)}: use the name in your credentials (letters, digits, '-' or '_')`);
    }
    this.creds = opts.credentials === null ? undefined : (opts.credentials ?? envCredentials());
    this.client = opts.client ?? (this.creds?.identity.role === "client" ? this.creds.identity.name : undefined);
    this.source = opts.source || "/agentmesh/sdk/typescript";
  }

  private taskEvent(agent: string, task: TaskRequest, opts: TaskOptions, replyto?: string): MeshEvent<TaskRequest> {
    if (!agentNamePattern.test(agent)) throw new Error(`agent name ${JSON.stringify(agent)}: use 1 to 64 ASCII letters, digits, '-' or '_'`);
    const id = opts.id || `t-${randomUUID()}`;
    if (!idPattern.test(id)) throw new Error(`task id ${JSON.stringify(id)}: use 1 to 128 letters, digits, '-', '_' or '='`);
    const deadline = opts.deadline instanceof Date ? opts.deadline.toISOString() : opts.deadline;
    // owner: a client's task is its own, so its progress goes where it reads (docs/protocol.md, "Owned events and text").
    return newEvent(EventTypes.taskRequested, this.source, task, { replyto, deadline, traceparent: opts.traceparent, owner: this.client }, id);
  }

  /** resultSubject is where the result of task id sent to agent goes. */
  resultSubject(agent: string, id: string): string {
    return this.client ? this.names.clientResult(agent, this.client, id) : this.names.result(agent, id);
  }

  /**
   * send publishes a task on the durable path (mesh.task.<agent>) and
   * returns its id at once; await result(agent, id) for its result.
   */
  async send(agent: string, task: TaskRequest, opts: TaskOptions = {}): Promise<string> {
    const id = opts.id || `t-${randomUUID()}`;
    const ev = this.taskEvent(agent, task, { ...opts, id }, this.client ? this.resultSubject(agent, id) : undefined);
    const m = encode(ev);
    this.creds?.sign(this.names.task(agent), m.headers, m.data);
    await this.js.publish(this.names.task(agent), m.data, { headers: m.headers, msgID: id });
    return id;
  }

  /** result waits for the result of task id sent to agent (it is kept in MESH_RESULTS, so reading late is fine). */
  async result(agent: string, id: string, opts: { waitMs?: number; signal?: AbortSignal } = {}): Promise<TaskOutcome> {
    const subject = this.resultSubject(agent, id);
    const msg = await this.first(subject, opts.waitMs ?? 60_000, opts.signal);
    if (!msg) throw new MeshError(Codes.timeout, `no result of task ${id} for ${agent} on ${subject} within ${opts.waitMs ?? 60_000} ms`);
    const event = decode(msg) as MeshEvent<AgentResult>;
    return { result: event.data as AgentResult, event };
  }

  /** task sends a task on the durable path and waits for its result. */
  async task(agent: string, task: TaskRequest, opts: TaskOptions = {}): Promise<TaskOutcome> {
    const id = await this.send(agent, task, opts);
    return this.result(agent, id, { waitMs: opts.waitMs ?? (task.timeout_ms ? task.timeout_ms + 10_000 : 60_000), signal: opts.signal });
  }

  /**
   * call sends a task on the direct path (mesh.call.<agent>, the agent's
   * micro endpoint): at most once, no retries, the reply is the result.
   */
  async call(agent: string, task: TaskRequest, opts: TaskOptions = {}): Promise<TaskOutcome> {
    const ev = this.taskEvent(agent, task, opts);
    const m = encode(ev);
    this.creds?.sign(this.names.call(agent), m.headers, m.data);
    const timeout = opts.waitMs ?? (task.timeout_ms ? task.timeout_ms + 5000 : 30_000);
    let reply;
    try {
      reply = await this.nc.request(this.names.call(agent), m.data, { headers: m.headers, timeout });
    } catch (err) {
      const why = (err as Error).message || String(err);
      if (/no responders/i.test(why) || (err as { code?: string }).code === "503") {
        throw new MeshError(Codes.unavailable, `no instance of ${agent} answers direct calls on ${this.names.call(agent)}: start one, or send the task on the durable path`, true);
      }
      throw new MeshError(Codes.timeout, `direct call of ${agent} (task ${ev.id}): ${why}`);
    }
    const event = decode(reply) as MeshEvent<AgentResult>;
    return { result: event.data as AgentResult, event };
  }

  /** cancel asks agent to stop task id; it returns the answering instance, or undefined when none runs it. */
  async cancel(agent: string, id: string, waitMs = 2000): Promise<string | undefined> {
    try {
      const r = await this.nc.request(this.names.control(agent), JSON.stringify({ taskid: id }), { timeout: waitMs });
      return (JSON.parse(new TextDecoder().decode(r.data)) as { instance?: string }).instance;
    } catch {
      return undefined;
    }
  }

  /** agents returns the announcement of every live instance (a registry query). */
  async agents(waitMs = 500): Promise<Announcement[]> {
    const out: Announcement[] = [];
    const replies = await this.nc.requestMany(this.names.registryQuery, new Uint8Array(), { maxWait: waitMs, strategy: "timer" } as never);
    for await (const m of replies) {
      try {
        out.push(decode(m).data as Announcement);
      } catch {
        // a reply that does not decode is no live instance
      }
    }
    return out;
  }

  /**
   * chat sends a chat turn and waits for its answer. Without
   * conversationId it starts a conversation named by the request id.
   * onEvent sees the turn's progress (io.agentmesh.chat.progress) as it
   * comes; onDelta each piece of the text the turn's model writes, as it
   * writes it (mesh.delta.<conversation>, core NATS: a piece is seen at most
   * once, and every piece that reached this connection before the answer is
   * handed over before chat resolves). A step's pieces are handed over after
   * its "thinking" note, which onEvent sees first: the note comes through
   * JetStream and the pieces on core NATS, so pieces that overtake it are
   * held until it comes. The answer is whole whatever pieces
   * were lost. An earlier turn's answer is never taken for this one's.
   */
  async chat(
    message: string,
    opts: { conversationId?: string; waitMs?: number; onEvent?: Listener; onDelta?: DeltaListener; traceparent?: string } = {},
  ): Promise<ChatResponse> {
    const id = `c-${randomUUID()}`;
    const conversation = opts.conversationId || id;
    if (!idPattern.test(conversation)) throw new Error(`conversation id ${JSON.stringify(conversation)}: use 1 to 128 letters, digits, '-', '_' or '='`);
    const data: Record<string, unknown> = { message };
    if (opts.conversationId) data.conversation_id = opts.conversationId;
    const ev = newEvent(EventTypes.chatRequested, this.source, data, { conversationid: conversation, traceparent: opts.traceparent }, id);
    const m = encode(ev);
    const since = new Date(Date.now() - 1000);
    // Subscribed before the request, with a callback: the connection calls
    // it as it reads each piece, so the pieces read before the answer have
    // been handed over when the answer (read later on the same connection)
    // is taken.
    const order = opts.onDelta ? new DeltaOrder(opts.onDelta) : undefined;
    const stopDeltas = order ? this.followDeltas(conversation, (d) => order.piece(d)) : () => undefined;
    const onEvent = (e: MeshEvent) => {
      opts.onEvent?.(e);
      if (e.type === EventTypes.chatProgress) order?.noted(e.data as { taskid?: string; message?: string; step?: number });
    };
    try {
      await this.js.publish(this.names.chatRequest(this.client), m.data, { headers: m.headers, msgID: id });
      // The answer to request R is stored with Nats-Msg-Id chat-R.
      const answer = await this.follow(conversation, since, opts.waitMs ?? 120_000, onEvent, (e, msg) =>
        e.type === EventTypes.chatResponded && (msg.headers?.get("Nats-Msg-Id") || `chat-${id}`) === `chat-${id}`,
      );
      order?.flush();
      return answer.data as ChatResponse;
    } finally {
      stopDeltas();
    }
  }

  /**
   * followDeltas calls fn with each piece of text the chat model writes in
   * conversation, from now on, until the returned stop is called (the Go
   * client's FollowDeltas). Pieces are sent at most once and never stored:
   * one written before this subscription, or lost, is not seen again; seq
   * counts a step's pieces from 1, so a gap shows. A piece that does not
   * decode is dropped, as a lost one would be.
   */
  followDeltas(conversation: string, fn: DeltaListener): () => void {
    if (!idPattern.test(conversation)) throw new Error(`conversation id ${JSON.stringify(conversation)}: use 1 to 128 letters, digits, '-', '_' or '='`);
    const callback = (err: Error | null, m: Msg) => {
      if (err) return;
      let d: ChatDelta;
      try {
        d = JSON.parse(new TextDecoder().decode(m.data)) as ChatDelta;
      } catch {
        return;
      }
      if (typeof d?.text === "string") fn(d);
    };
    // A client's own text; without a client name, owned or not (admin on a client's conversation).
    const own = this.names.deltas(conversation, this.client);
    const subs = [this.nc.subscribe(own, { callback }), ...(this.client ? [] : [this.nc.subscribe(`${own}.*`, { callback })])];
    return () => {
      for (const sub of subs) {
        try {
          sub.unsubscribe();
        } catch {
          // the connection is gone already
        }
      }
    };
  }

  /** submit submits a pipeline and returns its run id (the event id unless runId is given). */
  async submit(spec: PipelineSpec, opts: { runId?: string; traceparent?: string; vars?: Record<string, unknown> } = {}): Promise<string> {
    const run = opts.runId || `run-${randomUUID()}`;
    if (!idPattern.test(run)) throw new Error(`run id ${JSON.stringify(run)}: use 1 to 128 letters, digits, '-', '_' or '='`);
    const ev = newEvent(EventTypes.pipelineSubmitted, this.source, spec, { runid: run, traceparent: opts.traceparent });
    const m = encode(ev);
    await this.js.publish(this.names.pipelineSubmit(this.client), m.data, { headers: m.headers, msgID: `submit-${run}` });
    return run;
  }

  /** followRun calls onEvent with each event of run (step events, task progress) from its start, and returns the run's final event. */
  async followRun(run: string, opts: { waitMs?: number; onEvent?: Listener } = {}): Promise<RunEvent> {
    const ev = await this.follow(run, undefined, opts.waitMs ?? 600_000, opts.onEvent, (e) => e.type === EventTypes.pipelineCompleted);
    return ev.data as RunEvent;
  }

  /** resolve answers an approval (decision) or input (value) step of a run that waits for a person. */
  async resolve(answer: Resolution): Promise<void> {
    const ev = newEvent(EventTypes.resolveRequested, this.source, answer, { runid: answer.runid });
    const m = encode(ev);
    await this.js.publish(this.names.pipelineResolve(this.client), m.data, { headers: m.headers, msgID: ev.id });
  }

  /** first returns the first message stored on subject in MESH_RESULTS, or null after waitMs. */
  private async first(subject: string, waitMs: number, signal?: AbortSignal): Promise<JsMsg | null> {
    const r = await openReader(this.nc, this.names.resultsStream, subject);
    try {
      const until = Date.now() + waitMs;
      while (Date.now() < until) {
        if (signal?.aborted) throw signal.reason;
        const m = await r.next(Math.min(5000, until - Date.now()));
        if (m) return m;
      }
      return null;
    } finally {
      await r.close();
    }
  }

  /**
   * follow reads mesh.events.<id>.> (a client's own: mesh.events.<id>.*.<client>)
   * from MESH_EVENTS until an event matches done.
   */
  private async follow(id: string, since: Date | undefined, waitMs: number, onEvent: Listener | undefined, done: (e: MeshEvent, m: JsMsg) => boolean): Promise<MeshEvent> {
    const r = await openReader(this.nc, this.names.eventsStream, this.names.eventsOf(id, this.client), since);
    try {
      const until = Date.now() + waitMs;
      while (Date.now() < until) {
        const m = await r.next(Math.min(5000, until - Date.now()));
        if (!m) continue;
        let ev: MeshEvent;
        try {
          ev = decode(m);
        } catch {
          continue;
        }
        onEvent?.(ev);
        if (done(ev, m)) return ev;
      }
      throw new MeshError(Codes.timeout, `nothing ended ${id} within ${waitMs} ms`);
    } finally {
      await r.close();
    }
  }
}

/**
 * DeltaOrder holds a chat step's pieces that arrive before the step's
 * "thinking" note (stored by the orchestrator before the first piece was
 * sent) and hands them over once the note, or the answer, has come.
 */
class DeltaOrder {
  private thought = 0;
  private held: ChatDelta[] = [];
  constructor(private readonly fn: DeltaListener) {}

  piece(d: ChatDelta): void {
    if (d.step > this.thought && this.held.length < 4096) this.held.push(d);
    else this.fn(d);
  }

  /** noted is called after a progress note was handed over. */
  noted(p: { taskid?: string; message?: string; step?: number }): void {
    if (p?.taskid || p?.message !== "thinking") return;
    this.thought = p.step ? Math.max(this.thought, p.step) : Number.POSITIVE_INFINITY;
    const ready = this.held.filter((d) => d.step <= this.thought);
    this.held = this.held.filter((d) => d.step > this.thought);
    for (const d of ready) this.fn(d);
  }

  flush(): void {
    const all = this.held;
    this.held = [];
    for (const d of all) this.fn(d);
  }
}
