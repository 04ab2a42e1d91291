package client_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// A direct task: send one task to an agent by name and await its result,
// with nothing but NATS between the client and the agent.
func ExampleDispatcher() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mesh, err := embedded.StartLocal(ctx, embedded.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mesh.Close()
	nc, js, names := mesh.Conn, mesh.JS, mesh.Names

	// An agent, served in this process for the example; usually its own.
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
	rt, err := agents.NewRuntime(nc, shout)
	if err != nil {
		fmt.Println(err)
		return
	}
	go rt.Run(ctx)
	<-rt.Ready()

	d := client.NewDispatcher(js, names, "example")
	meta := client.DispatchMeta{}
	task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("hello, mesh", "example")}}
	taskID, err := d.Dispatch(ctx, "Shout", task, meta)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := d.Await(ctx, names.Result("Shout", taskID), taskID)
	if err != nil {
		fmt.Println(err)
		return
	}
	text, _ := res.Result.Outputs["text"].Text()
	fmt.Println(res.Result.Success, text)
	// Output: true HELLO, MESH
}

// A pipeline is built fluently (or read from YAML or JSON) and checked for
// its shape before it is sent.
func ExampleNewPipeline() {
	spec, err := client.NewPipeline("sunsets").
		SeedImages("img-1", "img-2").
		Step("analyse", "ImageAnalysisAgent").
		Then("organize", "FolderOrganizerAgent").Param("dry_run", true).
		Build()
	fmt.Println(spec.Name, len(spec.Steps), spec.Steps[1].DependsOn, err)
	// Output: sunsets 2 [analyse] <nil>
}
