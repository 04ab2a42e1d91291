// @agentmesh/sdk: agentmesh agents and clients in TypeScript, speaking the
// wire contract of docs/protocol.md on the official NATS JavaScript client.

export { defineAgent, maxStepBytes, run } from "./agent.js";
export type { AgentDefinition, CallTarget, Execute, Outcome, RunOptions, RunningAgent, TaskContext } from "./agent.js";
export { MeshClient } from "./client.js";
export type { ClientOptions, DeltaListener, Listener, TaskOptions, TaskOutcome } from "./client.js";
export { decode, encode, newEvent, encodeHeaderValue, decodeHeaderValue } from "./cloudevents.js";
export type { MeshEvent } from "./cloudevents.js";
export { connectOptions } from "./connect.js";
export { Codes, MeshError, RetryableError } from "./errors.js";
export { Files, newFileID, spillThreshold } from "./files.js";
export { EventTypes, Names, deadHeaders } from "./names.js";
export { Schemas } from "./schemas.js";
export type * from "./types.gen.js";
export { Credentials, parseUser, taskDigest, taskTag } from "./signing.js";
export type { Identity, Role } from "./signing.js";
