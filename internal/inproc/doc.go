// Package inproc runs agents and orchestrator replicas in a test's own
// process against a real (embedded) NATS server: each returns once it is
// ready and is stopped, drained, when the test ends.
package inproc
