// Package client is what a program needs to use a running mesh without
// being part of it: build, send and await chat requests (Turn,
// NewChatRequest, PublishChatRequest), build and submit pipelines
// (NewPipeline, LoadPipeline, SubmitPipeline), dispatch tasks to agents and
// await their results (Dispatcher), watch the live agents (Registry) and
// follow the events of a run or conversation (Follow).
//
// It is the facade: the dispatcher, the registry and Follow are those of
// internal/meshcore (which agents and the orchestrator use themselves), the
// pipeline readers those of internal/pipespec. It imports only those, the
// wire packages (schemas, bus) and nats.go: no LLM client, no agent runtime,
// no orchestrator (internal/layers holds that). The CLI and the examples
// are built on it.
package client
