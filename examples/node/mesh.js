// mesh.js: what the example's scripts share on top of the SDK: the mesh's
// names for the prefix in the environment, and, for the CloudEvents SDK
// interop scripts (binding*.js), events built with the cloudevents package.

import { CloudEvent } from "cloudevents";
import { Names, EventTypes } from "@agentmesh/sdk";

export { connectOptions } from "@agentmesh/sdk";

// names returns the Names of one prefix: AGENTMESH_PREFIX, as the Go side
// reads it, or the older MESH_PREFIX, or "mesh".
export function names(prefix = process.env.AGENTMESH_PREFIX || process.env.MESH_PREFIX || "mesh") {
  return new Names(prefix);
}

// Event types of the wire contract.
export const types = EventTypes;

// newEvent builds a CloudEvent (of the cloudevents package) with JSON data
// and the given extensions.
export function newEvent(type, source, data, ext = {}) {
  const attrs = { type, source, datacontenttype: "application/json", data };
  for (const [k, v] of Object.entries(ext)) if (v) attrs[k] = v;
  return new CloudEvent(attrs);
}
