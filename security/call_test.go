package security_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/schemas"
)

// An agent calls another through the mesh on a secure mesh: it finds it in
// the registry, sends its task and reads its result as its own identity;
// another agent cannot read that agent's call results.
func TestAgentCallSecure(t *testing.T) {
	m := startSecure(t)
	m.serve(t, text.New())
	asker := agents.Func(schemas.AgentContract{
		Name: "Asker", Capability: schemas.CapTransformation, Description: "asks whoever offers TEXT to upper-case",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		s, _ := ec.Text("text")
		res, err := ec.Call(ctx, schemas.CallTarget{Capability: schemas.CapTransformation, Output: schemas.TypeText}, upper(s))
		if err != nil {
			return schemas.AgentResult{}, err
		}
		return schemas.AgentResult{Success: true, Summary: "asked " + res.Agent, Outputs: res.Outputs}, nil
	})
	m.serve(t, asker)
	a := m.connect(t, alice)
	res := directCall(t, m, a, alice, "Asker", upper("hello"))
	if !res.Result.Success || res.Result.Summary != "asked "+text.Name || !strings.Contains(string(res.Result.Outputs["text"].Value), "HELLO") {
		t.Fatalf("Asker's call of TextAgent on a secure mesh: %+v %+v", res.Result, res.Result.Error)
	}
	e := m.connect(t, evil)
	filter := m.names.CallResults("Asker")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err := e.js.CreateConsumer(ctx, m.names.ResultsStream(), jetstream.ConsumerConfig{Name: "peek", FilterSubject: filter})
	cancel()
	if err == nil {
		t.Fatal("EvilAgent made a consumer on Asker's call results")
	}
	e.denied(t, "Publish", "$JS.API.CONSUMER.CREATE."+m.names.ResultsStream()+".peek."+filter)
	if _, err := e.SubscribeSync(filter); err != nil {
		t.Fatal(err)
	}
	e.denied(t, "Subscription", filter)
}
