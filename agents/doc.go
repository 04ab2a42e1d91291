// Package agents is the agent SDK and runtime: an Agent is a contract plus
// Execute, and the runtime serves one agent on the bus (announce, heartbeat,
// consume its tasks, validate, execute under the deadline, publish the result,
// drain on SIGTERM). The built-in agents are not part of the SDK; they live
// under agents/builtin and use it like any other agent.
package agents
