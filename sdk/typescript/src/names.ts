// names.ts: the subjects, streams, buckets and event types of one mesh
// prefix (docs/protocol.md, "Subjects" and "Streams, buckets and the object
// store").

/** Event types of the wire contract. */
export const EventTypes = {
  agentAnnounced: "io.agentmesh.agent.announced",
  agentDeparted: "io.agentmesh.agent.departed",
  taskRequested: "io.agentmesh.task.requested",
  taskCompleted: "io.agentmesh.task.completed",
  taskFailed: "io.agentmesh.task.failed",
  taskProgress: "io.agentmesh.task.progress",
  chatRequested: "io.agentmesh.chat.requested",
  chatProgress: "io.agentmesh.chat.progress",
  chatResponded: "io.agentmesh.chat.responded",
  pipelineSubmitted: "io.agentmesh.pipeline.submitted",
  pipelineCompleted: "io.agentmesh.pipeline.completed",
  resolveRequested: "io.agentmesh.pipeline.resolve.requested",
  resolveRefused: "io.agentmesh.pipeline.resolve.refused",
} as const;

/**
 * Headers of a dead letter on mesh.dead.<agent>, next to the task's own
 * (docs/protocol.md, "6. Retry, back off, dead-letter"); a refusal notice on
 * mesh.dead.<agent>.refused carries code, reason, agent, stream and
 * sequence, and the task id in ce-id.
 */
export const deadHeaders = {
  reason: "Agentmesh-Dead-Reason",
  agent: "Agentmesh-Dead-Agent",
  instance: "Agentmesh-Dead-Instance",
  deliveries: "Agentmesh-Dead-Deliveries",
  /** the error code the task was refused with */
  code: "Agentmesh-Dead-Code",
  /** where the task was stored: the stream and sequence its publisher was acknowledged with */
  stream: "Agentmesh-Dead-Stream",
  sequence: "Agentmesh-Dead-Sequence",
} as const;

/** An id that can be a subject token and a KV key (task, run, conversation ids). */
export const idPattern = /^[A-Za-z0-9_=-]{1,128}$/;
/** An agent name: one subject token, a durable consumer name and a micro service name. */
export const agentNamePattern = /^[A-Za-z0-9_-]{1,64}$/;
const prefixPattern = /^[A-Za-z0-9_-]{1,32}$/;

/** owned appends the owner token to subject, when there is an owner. */
const owned = (subject: string, owner?: string) => (owner ? `${subject}.${owner}` : subject);

/** The names of one mesh: subjects, streams, buckets and the object store. */
export class Names {
  readonly prefix: string;

  /**
   * @param prefix the deployment's prefix: AGENTMESH_PREFIX when set, else "mesh".
   */
  constructor(prefix: string = process.env.AGENTMESH_PREFIX || "mesh") {
    if (!prefixPattern.test(prefix)) {
      throw new Error(`prefix ${JSON.stringify(prefix)}: use 1 to 32 ASCII letters, digits, '-' or '_'`);
    }
    this.prefix = prefix;
  }

  task(agent: string): string {
    return `${this.prefix}.task.${agent}`;
  }
  /** The subject prefix every result of agent's tasks starts with. */
  results(agent: string): string {
    return `${this.prefix}.result.${agent}.`;
  }
  result(agent: string, taskID: string): string {
    return `${this.prefix}.result.${agent}.${taskID}`;
  }
  /** Where a client reads the results of its own direct calls. */
  clientResult(agent: string, client: string, taskID: string): string {
    return `${this.prefix}.result.${agent}.client.${client}.${taskID}`;
  }
  /** Where agent caller reads the results of its calls to agent. */
  agentResult(agent: string, caller: string, taskID: string): string {
    return `${this.prefix}.result.${agent}.agent.${caller}.${taskID}`;
  }
  /**
   * The events of kind of conversation or run id: with owner (the client
   * that owns it), mesh.events.<id>.<kind>.<owner>, the only events a
   * secure mesh lets that client read (docs/protocol.md, "Owned events and
   * text").
   */
  events(id: string, kind: "task" | "chat" | "pipeline" | "registry", owner?: string): string {
    return owned(`${this.prefix}.events.${id}.${kind}`, owner);
  }
  /** Where the model's text for conversation (or run, or task) id goes, piece by piece (core NATS, never stored); with owner, mesh.delta.<id>.<owner>. */
  deltas(id: string, owner?: string): string {
    return owned(`${this.prefix}.delta.${id}`, owner);
  }
  /** Every event of id: mesh.events.<id>.>, or with owner only that client's, mesh.events.<id>.*.<owner>. */
  eventsOf(id: string, owner?: string): string {
    return owner ? `${this.prefix}.events.${id}.*.${owner}` : `${this.prefix}.events.${id}.>`;
  }
  dead(agent: string): string {
    return `${this.prefix}.dead.${agent}`;
  }
  /**
   * Where, on a secure mesh, agent posts the refusal notice of a task it
   * can answer on no result subject; every identity may read it.
   */
  deadRefused(agent: string): string {
    return `${this.prefix}.dead.${agent}.refused`;
  }
  announce(agent: string): string {
    return `${this.prefix}.registry.announce.${agent}`;
  }
  depart(agent: string): string {
    return `${this.prefix}.registry.depart.${agent}`;
  }
  get registryQuery(): string {
    return `${this.prefix}.registry.query`;
  }
  control(agent: string): string {
    return `${this.prefix}.control.${agent}`;
  }
  call(agent: string): string {
    return `${this.prefix}.call.${agent}`;
  }
  /** The chat request subject; with client, that client's own. */
  chatRequest(client?: string): string {
    return client ? `${this.prefix}.chat.request.client.${client}` : `${this.prefix}.chat.request`;
  }
  pipelineSubmit(client?: string): string {
    return client ? `${this.prefix}.pipeline.submit.client.${client}` : `${this.prefix}.pipeline.submit`;
  }
  pipelineResolve(client?: string): string {
    return client ? `${this.prefix}.pipeline.resolve.client.${client}` : `${this.prefix}.pipeline.resolve`;
  }
  private upper(s: string): string {
    return `${this.prefix.toUpperCase()}_${s}`;
  }
  get tasksStream(): string {
    return this.upper("TASKS");
  }
  get resultsStream(): string {
    return this.upper("RESULTS");
  }
  get eventsStream(): string {
    return this.upper("EVENTS");
  }
  get deadStream(): string {
    return this.upper("DEAD");
  }
  get agentsBucket(): string {
    return `${this.prefix}_agents`;
  }
  /** the step journal (docs/durability.md) */
  get stepsBucket(): string {
    return `${this.prefix}_steps`;
  }
  get runsBucket(): string {
    return `${this.prefix}_runs`;
  }
  get conversationsBucket(): string {
    return `${this.prefix}_conversations`;
  }
  get filesStore(): string {
    return `${this.prefix}_files`;
  }
  /** the files bucket of client c on a secure mesh, e.g. mesh_files_alice (docs/security.md, "Files") */
  clientFilesStore(c: string): string {
    return `${this.prefix}_files_${c}`;
  }
}
