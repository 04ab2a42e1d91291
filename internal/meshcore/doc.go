// Package meshcore is what agents, the orchestrator and the mesh's own
// services share to work on the mesh: dispatching tasks and awaiting their
// results (Dispatcher), the live view of the agents (Registry), and
// following the events and text deltas of a run or conversation (Follow,
// FollowDeltas). It imports only the wire packages (schemas, bus) and
// nats.go.
//
// Programs outside the mesh use package client, whose Dispatcher, Registry
// and Follow are these.
package meshcore
