// Package pipelinespec is a pipeline spec as Go values: the steps and their
// kinds (agent, router, evaluator, for_each, repeat, pipeline, approval,
// input), the seed, variables, budget and schedule, the structural checks
// of Validate and the limits of CheckLimits, and Waves, the order in which
// the steps' dependencies let them run (see docs/workflows.md).
//
// Clients build specs with it (client.NewPipeline) and the orchestrator
// checks and runs them; an agent does not import it. It imports schemas
// alone: the data types, typed values and error codes a spec names. The
// conditions of when:, router branches and repeat.until are strings here;
// the orchestrator compiles them, as it knows the run's data.
package pipelinespec
