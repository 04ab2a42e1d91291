// Package agents is the agent SDK and runtime: an Agent is a contract plus
// Execute, and the runtime serves one agent on the bus (announce, heartbeat,
// consume its tasks, validate, execute under the deadline, publish the result,
// drain on SIGTERM). The built-in agents are not part of the SDK; they live
// under agents/builtin and use it like any other agent.
//
// WithObserver reports every task an instance takes (received, started,
// finished with its outcome) to a schemas.Observer; a contract's own data
// types (AgentContract.DataTypes) are declared in the runtime's registry at
// start, so its inputs and outputs are checked against them.
//
// Each task's steps are journaled in the mesh_steps bucket (journal.go,
// schemas.Step, docs/durability.md): a redelivered task gets what its model
// calls, agent-to-agent calls, file writes and ec.Step calls returned the
// first time instead of making them again. WithJournal(false) turns it off.
package agents
