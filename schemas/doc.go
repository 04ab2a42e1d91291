// Package schemas is the shared vocabulary of agentmesh: the contracts agents
// announce, the typed values that travel between them, file references and
// collections, results, execution contexts and conversation state. Pipeline
// specs, their checks and waves are package pipelinespec's.
//
// A data type is described once, by a DataType in a DataTypeRegistry: its
// JSON Schema, how two values merge, which state slot each content hint
// goes to, and how a value is counted and described to people and models.
// The built-in types come with NewRegistry; an agent in any language
// declares more in its contract (AgentContract.DataTypes), with one of the
// MergeRules. The Observer is the one seam where metrics, tracing and
// policy hang on the runtime and the orchestrator.
//
// It knows nothing about NATS. The JSON Schema files under json/ are embedded
// and used by the Go validation itself, so agents written in other languages
// validate against exactly the same documents.
package schemas
