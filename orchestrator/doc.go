// Package orchestrator is the thin wiring of one orchestrator replica: two
// durable consumers shared by every replica (requests on MESH_REQUESTS,
// step results on mesh.result.*.orchestrator.>), a pool of workers, and the
// hand-off of each message to the chat loop (package chat) or the pipeline
// scheduler (package pipeline), with the state store (package state), the
// router (package route) and the live registry (package client) they share.
//
// Replicas are stateless: every fact lives in KV or a stream, so any replica
// can advance any run and killing one loses nothing. WithObserver hangs
// metrics, tracing or policy on every transition (schemas.Observer).
package orchestrator
