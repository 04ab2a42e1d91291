// Package typescript holds the TypeScript SDK of agentmesh, an npm package
// (@agentmesh/sdk, see README.md), and its Go test: the SDK's own tests and
// its example agent run against a live embedded mesh, in a pipeline with Go
// agents.
package typescript
