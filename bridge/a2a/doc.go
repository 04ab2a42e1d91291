// Package a2a bridges the mesh and the Agent2Agent (A2A) protocol, version
// 1.0, JSON-RPC binding: NewHandler serves an agent card for every live
// agent and one for the mesh's chat, and maps A2A SendMessage,
// SendStreamingMessage, GetTask and CancelTask onto mesh tasks and chat
// turns; Remote turns a remote A2A agent into a mesh agent that forwards its
// tasks with SendMessage. docs/bridges.md describes the mapping.
package a2a
