// Package agents is the agent SDK and runtime: an Agent is a contract plus
// Execute, and the runtime serves one agent on the bus (announce, heartbeat,
// consume its tasks, validate, execute under the deadline, publish the result,
// drain on SIGTERM). The built-in agents live in sub-packages.
package agents
