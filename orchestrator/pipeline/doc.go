// Package pipeline validates declared pipelines against the live contracts
// (Validate) and runs them in topological waves (Scheduler): a wave's steps
// start together, each step's inputs are built from its parents' outputs by
// data type and hint, and the next wave starts when every step of the
// current one has ended.
//
// A step has a kind behind a small interface (stepKind in kind.go); today
// the only kind is an agent task (kind_agent.go). Waves, skips, records,
// events and the sweep are the same for every kind, so a new kind is a new
// file. Every transition reaches the events stream and the observer from
// one place (events.go).
package pipeline
