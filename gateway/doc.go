// Package gateway serves a mesh over HTTP: a JSON API for agents, tasks,
// chat, conversations, pipelines, runs and files, server-sent events fed by
// the mesh's event stream, and the embedded dashboard. It uses the same
// client package and state readers as the agentmesh CLI and keeps no state
// of its own, so any number of gateways can serve one mesh.
package gateway
