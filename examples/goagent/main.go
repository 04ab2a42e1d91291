// Command goagent is the README's example agent: it upper-cases a TEXT input.
// Run it with NATS_URL set, as many copies as you like.
package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/schemas"
)

func main() {
	shout := agents.Func(schemas.AgentContract{
		Name:        "ShoutAgent",
		Version:     "1.0.0",
		Capability:  schemas.CapTransformation,
		Description: "Upper-cases a text.",
		Inputs:      []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs:     []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		in, err := ec.Text("text")
		if err != nil {
			return schemas.AgentResult{}, err
		}
		return schemas.AgentResult{
			Success: true,
			Summary: "shouted",
			Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue(strings.ToUpper(in), "ShoutAgent")},
		}, nil
	})

	nc, err := nats.Connect(os.Getenv("NATS_URL"))
	if err != nil {
		panic(err)
	}
	rt, err := agents.NewRuntime(nc, shout)
	if err != nil {
		panic(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_ = rt.Run(ctx) // SIGTERM drains: in-flight tasks finish, departure is announced
}
