// Package client is what a program needs to use a running mesh without
// being part of it: build, send and await chat requests (Turn,
// NewChatRequest, PublishChatRequest), build and submit pipelines
// (NewPipeline, LoadPipeline, SubmitPipeline), dispatch tasks to agents and
// await their results (Dispatcher), watch the live agents (Registry) and
// follow the events of a run or conversation (Follow).
//
// It imports only the wire packages (schemas, bus) and nats.go: no LLM
// client, no orchestrator. The CLI and the examples are built on it.
package client
