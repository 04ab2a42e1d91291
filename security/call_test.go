package security_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
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
	// The call's task id is tagged with the signature of Asker's task, so
	// it is not <parent>-c1, which anyone who saw the parent's id in an
	// event could send a task under first.
	parent := res.Event.Ext(bus.ExtTaskID)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	info, err := m.res.Results.Info(ctx, jetstream.WithSubjectFilter(m.names.CallResults("Asker")))
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	untagged := m.names.CallResult(text.Name, "Asker", parent+"-c1")
	if len(info.State.Subjects) != 1 || info.State.Subjects[untagged] != 0 {
		t.Errorf("Asker's call results on %v; want one subject, not %s", info.State.Subjects, untagged)
	}
	for subject := range info.State.Subjects {
		if tag, ok := strings.CutPrefix(subject, untagged+"-"); !ok || len(tag) != 16 {
			t.Errorf("call result subject %s, want %s-<16-character tag>", subject, untagged)
		}
	}
	e := m.connect(t, evil)
	filter := m.names.CallResults("Asker")
	ctx, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err = e.js.CreateConsumer(ctx, m.names.ResultsStream(), jetstream.ConsumerConfig{Name: "peek", FilterSubject: filter})
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
