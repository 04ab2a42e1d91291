// Package orchestrator turns chat requests and declared pipelines into tasks
// for agents, and routes the agents' typed outputs back into conversation
// and run state kept in JetStream KV. Replicas are stateless: every fact
// needed between two events lives in KV or in a stream, so any replica can
// advance any run and a killed replica loses nothing.
//
// The reusable parts are the StateStore (compare-and-set over the
// conversations and runs buckets), the InputBuilder (a contract's typed
// inputs from state slots), the Router (outputs into slots by data type and
// content hint) and the Dispatcher (tasks onto mesh.task.<agent>). The
// Orchestrator wires them into the pipeline scheduler; pipelines come from
// YAML or JSON files (LoadPipeline), the fluent builder (NewPipeline) or
// io.agentmesh.pipeline.submitted events.
//
// Chat turns run through the same parts: the Chat loop (NewChat) reasons
// with an LLM over one tool per live agent (Tools), shows the state as Data
// messages (RenderData) and feeds observations back, up to a step limit;
// with no LLM configured, PlanOffline chains agents by their contracts.
package orchestrator
