package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/gateway"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/schemas"
)

// The gateway is the mesh's HTTP API: here an agent's contract is read and
// a task sent to it over HTTP, the answer its result.
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

	gw, err := gateway.New(ctx, mesh.Conn, gateway.WithValidator(orchestrator.ValidatePipeline))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gw.Close()
	srv := httptest.NewServer(gw)
	defer srv.Close()

	var agent struct {
		Contract schemas.AgentContract `json:"contract"`
	}
	for agent.Contract.Name == "" { // the gateway learns of the agent from the registry
		if resp, err := http.Get(srv.URL + "/api/agents/Shout"); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&agent)
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
			fmt.Println("Shout is not listed:", ctx.Err())
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	fmt.Println(agent.Contract.Name, agent.Contract.Inputs[0].Name)

	resp, err := http.Post(srv.URL+"/api/agents/Shout/tasks", "application/json",
		strings.NewReader(`{"inputs": {"text": {"data_type": "TEXT", "value": "hello, mesh"}}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var answer struct {
		Result schemas.AgentResult `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		fmt.Println(err)
		return
	}
	text, _ := answer.Result.Outputs["text"].Text()
	fmt.Println(resp.StatusCode, text)
	// Output:
	// Shout text
	// 200 HELLO, MESH
}
