// Package pipeline validates declared pipelines against the live contracts
// (Validate) and runs them in topological waves (Scheduler): a wave's steps
// start together, each step's inputs are built from its parents' outputs by
// data type and hint, and the next wave starts when every step of the
// current one has ended.
//
// # How the scheduler is built
//
// A run is a spec (written once), a header (status, wave in progress, a
// count of the wave's ends) and a record per step that ended (written once:
// the first writer decides). Reading it in this order makes the rest
// follow:
//
//   - scheduler.go: the Scheduler and its entry points: Submit,
//     ApplyResult (and FailUndecodable), Resolve (a person's answer).
//   - kind.go: stepKind, the interface every kind of step implements:
//     validate (its own checks at submit), start, owns and result (its
//     tasks and what their results do), expire (its deadline), tend (what
//     the sweep looks after) and cancel (what it started). The default of
//     a step of one task is oneTask.
//   - env.go: env, all a kind may use of the scheduler: the run's records,
//     slots and header, the one run writer, tasks and events out,
//     conditions, child runs. A kind never holds the Scheduler.
//   - kind_agent.go (an agent's task, and agent_approval.go for an agent
//     that asks a person first), kind_router.go, kind_evaluator.go,
//     kind_approval.go (approval and input steps), kind_foreach.go and
//     kind_repeat.go (over the loop engine in loop.go, validate_loop.go),
//     kind_sub.go (a sub-pipeline): each kind's special cases, in its file.
//   - settle.go: the one run writer. A step's end reaches the header only
//     through settle (batched per run, pipelined writes, the next
//     wave started by the update that ends one); any other change of the
//     header (an approval asked for or given, the sweep's republish mark,
//     the upgrade of a header of the previous layout) goes through amend
//     or writeHeader there. No other file writes a header (a test checks).
//   - waves.go: the pure part: counting an end, ending a wave, skipping the
//     dependants of a failed step, starting the next wave (advance), and
//     follow, which does what a saved header update asks (events, tasks).
//   - gate.go (skips by condition or router before a step starts),
//     inputs.go, seed.go, vars.go, condition.go: what a step reads.
//   - sweep.go: timeouts (each kind's expire), republishing a wave whose
//     tasks may be lost, and runs whose count fell behind; cancel.go: a
//     run's cancel, through each running step's kind.
//   - events.go (every transition reaches the events stream and the
//     observer from one place), cache.go (what this replica read or
//     wrote), upgrade.go (headers of the previous layout).
//
// A new kind is a new file: a type implementing stepKind, usually
// embedding oneTask, and one entry in kinds. The scheduler's tests are in
// this package: unit tests build a Scheduler on an embedded server
// (pipelined_test.go), scenario tests run a mesh of in-process agents and
// an orchestrator replica (internal/meshtest).
package pipeline
