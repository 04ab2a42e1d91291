// Package chat runs chat turns: a ReAct loop in which an LLM calls the live
// agents as tools (one per contract, Tools), reads the conversation's state
// as Data messages (RenderData) and each call's observation, up to a step
// limit; with no LLM, PlanOffline chains agents by their contracts and the
// same loop runs the plan.
//
// A turn's progress is saved in the state store after every step, so a turn
// whose replica died is resumed by the replica that gets the redelivered
// request; tool calls have deterministic task ids, so a resumed call runs
// once. Results come back one way: to the replica running the turn, on
// mesh.result.<agent>.<task>, and are routed into the conversation by it.
package chat
