// Package node holds the Node.js example of agentmesh: an agent
// (NodeWordCount, agent.js) and a chat client (client.js) written against
// docs/protocol.md with the official NATS JavaScript client and the
// CloudEvents SDK. Its Go test runs them as separate processes against an
// embedded mesh and an in-process orchestrator.
package node
