// Package node holds the Node.js example of agentmesh: an agent
// (NodeWordCount, agent.js) and a chat client (client.js) in plain
// JavaScript on the TypeScript SDK (sdk/typescript), and scripts checking
// the CloudEvents SDK's NATS header values. Its Go tests run them as
// separate processes against an embedded mesh and an in-process
// orchestrator, plain and secure.
package node
