package a2a_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bridge/a2a"
	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/schemas"
)

// The handler serves each agent of the mesh as an A2A agent: a card at
// /a2a/agents/<name>/.well-known/agent-card.json and a JSON-RPC endpoint
// that runs a message as one of its tasks. Dial is the A2A client.
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

	h, err := a2a.NewHandler(ctx, mesh.Conn)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	var cl *a2a.Client
	for cl == nil { // the handler learns of the agent from the registry
		if cl, err = a2a.Dial(ctx, nil, srv.URL+a2a.PathAgents+"/Shout"); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			fmt.Println("no card for Shout:", err)
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	fmt.Println(cl.Card().Name)

	res, err := cl.SendMessage(ctx, a2a.SendMessageRequest{Message: &a2a.Message{MessageID: "m-1", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hello, mesh")}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	task := res.Task
	fmt.Println(task.Status.State)
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			if p.Text != nil {
				fmt.Println(a.Name, *p.Text)
			}
		}
	}
	// Output:
	// Shout
	// TASK_STATE_COMPLETED
	// text HELLO, MESH
}
