// Package schemas is the shared vocabulary of agentmesh: the contracts agents
// announce, the typed values that travel between them, file references and
// collections, results, execution contexts and conversation state.
//
// It knows nothing about NATS. The JSON Schema files under json/ are embedded
// and used by the Go validation itself, so agents written in other languages
// validate against exactly the same documents.
package schemas
