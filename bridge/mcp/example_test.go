package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/agents"
	meshmcp "github.com/agentmesh/agentmesh/bridge/mcp"
	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// The MCP server offers each live agent of the mesh as a tool, beside chat
// and run_pipeline; a tool call runs one task. Here an MCP Go SDK client
// talks to it over in-memory transports (agentmesh mcp uses stdio).
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mesh, err := embedded.StartLocal(ctx, embedded.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mesh.Close()

	shout := agents.Func(schemas.AgentContract{Name: "Shout", Capability: schemas.CapTransformation, Description: "upper-cases text",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			v, err := ec.Read("text", schemas.TypeText)
			if err != nil {
				return schemas.AgentResult{}, err
			}
			s, _ := v.Text()
			return schemas.AgentResult{Success: true, Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue(strings.ToUpper(s), "Shout")}}, nil
		})
	rt, err := agents.NewRuntime(mesh.Conn, shout)
	if err != nil {
		fmt.Println(err)
		return
	}
	go rt.Run(ctx)
	<-rt.Ready()

	reg, err := client.NewRegistry(ctx, mesh.Resources.Agents)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Stop()
	if err := reg.Wait(ctx, "Shout", 1); err != nil {
		fmt.Println(err)
		return
	}
	s, err := meshmcp.NewServer(mesh.Conn, mesh.Resources, reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.MCP().Connect(ctx, st, nil); err != nil {
		fmt.Println(err)
		return
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tl := range tools.Tools {
		fmt.Println(tl.Name)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "Shout", Arguments: map[string]any{"text": "hello, mesh"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok && t.Text == "HELLO, MESH" {
			fmt.Println(res.IsError, t.Text)
		}
	}
	// Output:
	// Shout
	// chat
	// run_pipeline
	// false HELLO, MESH
}
