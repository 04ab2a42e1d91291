package agents_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/schemas"
)

// An agent is a contract and an Execute function; its Runtime takes its
// tasks from the mesh, checks them against the contract, runs them under
// their deadline and publishes each result. Here a task comes on the direct
// path, a NATS request to mesh.call.<agent> whose reply is the result.
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
	rt, err := agents.NewRuntime(mesh.Conn, shout, agents.WithConcurrency(4))
	if err != nil {
		fmt.Println(err)
		return
	}
	go rt.Run(ctx) // blocks until ctx ends, then drains
	<-rt.Ready()

	ask := func(text string) {
		task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue(text, "example")}}
		if text == "" {
			task.Inputs = nil // the contract requires text
		}
		ev, err := bus.NewEvent(bus.TypeTaskRequested, "/example", task)
		if err != nil {
			fmt.Println(err)
			return
		}
		subject, _ := mesh.Names.Call("Shout")
		msg, _ := bus.Encode(subject, ev)
		reply, err := mesh.Conn.RequestMsgWithContext(ctx, msg)
		if err != nil {
			fmt.Println(err)
			return
		}
		got, err := bus.Decode(reply)
		if err != nil {
			fmt.Println(err)
			return
		}
		var res schemas.AgentResult
		if err := got.DataAs(&res); err != nil {
			fmt.Println(err)
			return
		}
		if !res.Success {
			fmt.Println(got.Type, res.Error.Code)
			return
		}
		out, _ := res.Outputs["text"].Text()
		fmt.Println(got.Type, out)
	}
	ask("hello, mesh")
	ask("")
	// Output:
	// io.agentmesh.task.completed HELLO, MESH
	// io.agentmesh.task.failed invalid_input
}
