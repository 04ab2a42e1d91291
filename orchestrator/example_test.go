package orchestrator_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/schemas"
)

// A replica of the orchestrator runs pipelines submitted on the bus: it
// validates them against the live contracts, dispatches each wave and
// publishes the run's end. Every process here would usually be its own.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mesh, err := embedded.StartLocal(ctx, embedded.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mesh.Close()
	nc, js, names := mesh.Conn, mesh.JS, mesh.Names
	o, err := orchestrator.New(nc)
	if err != nil {
		fmt.Println(err)
		return
	}
	ready := make(chan struct{})
	go o.RunReady(ctx, func() { close(ready) })
	<-ready

	words := agents.Func(schemas.AgentContract{Name: "Words", Capability: schemas.CapGeneration, Description: "writes a text",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.AgentResult{Success: true, Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue("sun and sea", "Words")}}, nil
		})
	rt, err := agents.NewRuntime(nc, words)
	if err != nil {
		fmt.Println(err)
		return
	}
	go rt.Run(ctx)
	<-rt.Ready()
	if err := o.Registry().Wait(ctx, "Words", 1); err != nil {
		fmt.Println(err)
		return
	}

	spec := client.NewPipeline("hello").Step("write", "Words").MustBuild()
	runID := "run-1"
	events, stop, err := client.Follow(ctx, js, names, names.EventsOf(runID), false)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	if _, err := client.SubmitPipeline(ctx, js, names, spec, runID, "example"); err != nil {
		fmt.Println(err)
		return
	}
	for {
		select {
		case ev := <-events:
			fmt.Println(strings.TrimPrefix(ev.Type, "io.agentmesh.pipeline."))
			if ev.Type == bus.TypePipelineCompleted {
				return
			}
		case <-ctx.Done():
			fmt.Println(ctx.Err())
			return
		}
	}
	// Output:
	// step.started
	// step.completed
	// completed
}
