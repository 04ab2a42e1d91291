// Package badinput holds the catalogue of bad inputs: table tests that send
// a shared in-process mesh (embedded NATS, the real orchestrator with the
// offline chat planner, built-in agents) malformed tasks, chat requests,
// pipeline specs and file references, and check that each ends with the
// error code docs/errors.md documents, on the subject its sender reads,
// leaving no half-written state, and that the next good request is served.
package badinput
