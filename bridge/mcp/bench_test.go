package mcp_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/schemas"
)

// BenchmarkServerCallTool is the round trip of one agent tool call as an
// MCP client sees it: the Go SDK client (in-memory transport) calls the
// mesh's MCP server, which sends the task on the durable path to an agent
// on an embedded NATS server and answers with its result.
func BenchmarkServerCallTool(b *testing.B) {
	m := startMesh(b)
	m.runAgent(b, shout("ShoutAgent"))
	m.mcp.Sync()
	cs := connect(b, m.mcp, nil)
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "ShoutAgent", Arguments: map[string]any{"text": "hello"}}
	for b.Loop() {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("%v %+v", err, res)
		}
	}
}

// BenchmarkRemoteToolCall is one task of an agent made from a tool of the
// TypeScript example server (stdio), executed directly: the mesh's cost of
// a call to an MCP server, without the bus.
func BenchmarkRemoteToolCall(b *testing.B) {
	r := dialExample(b)
	ags, err := r.Agents(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for _, a := range ags {
		if a.Contract().Name != "reverse" {
			continue
		}
		ctx := context.Background()
		for b.Loop() {
			ec := schemas.ContextFromTask(schemas.DefaultRegistry(), schemas.TaskRequest{
				Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("a b c", "bench")},
			})
			res, err := a.Execute(ctx, ec)
			if err != nil || !res.Success {
				b.Fatalf("%v %+v", err, res.Error)
			}
		}
		return
	}
	b.Fatal("no reverse agent")
}
