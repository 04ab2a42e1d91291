// Package bus is everything agentmesh does with NATS as a client: connection
// options, the subject and stream names of the wire contract,
// idempotent provisioning of streams, KV buckets and the object store, and the
// CloudEvents 1.0 codec over NATS messages (binary and structured mode).
//
// The package knows nothing about agents or the orchestrator; they meet here
// only through subjects, streams and events. It links no NATS server: the
// in-process server lives in bus/embedded, which agents and clients do not
// import.
package bus
