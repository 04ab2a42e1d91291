// Package pipeline validates declared pipelines against the live contracts
// (Validate) and runs them in topological waves (Scheduler): a wave's steps
// start together, each step's inputs are built from its parents' outputs by
// data type and hint, and the next wave starts when every step of the
// current one has ended.
//
// A step has a kind behind a small interface (stepKind in kind.go): an
// agent task (kind_agent.go), a router, an evaluator, an approval or input,
// a for_each or repeat (kind_foreach.go, kind_repeat.go, over the loop
// engine in loop.go) and a sub-pipeline (kind_sub.go). Waves, skips,
// records, events and the sweep are the same for every kind, so a new kind
// is a new file. Every transition reaches the events stream and the observer from
// one place (events.go).
package pipeline
