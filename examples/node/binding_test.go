package node_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// bindingValue holds each class of character the NATS binding's header
// values treat specially: spaces, non-ASCII (the spec's example), a double
// quote and a percent sign.
const bindingValue = `Euro € 😀 "quoted" 100%`

// nodeTools returns node, after installing the example's npm packages, or
// skips the test when Node.js is not installed.
func nodeTools(t *testing.T) string {
	t.Helper()
	nodeBin, errNode := exec.LookPath("node")
	npmBin, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("skipping the CloudEvents binding test with the JavaScript SDK: node and npm are not on PATH (install Node.js 20 or later to run it; CI does)")
	}
	npmInstall(t, npmBin)
	return nodeBin
}

// TestBindingNodeAgent: the mesh sends a task whose subject and "label"
// extension need percent-encoding; an agent built on the JavaScript
// cloudevents SDK (binding_agent.js) decodes them and answers with every
// header value over-encoded in lower-case hex, ':' of its time included;
// the mesh reads the answer.
func TestBindingNodeAgent(t *testing.T) {
	node := nodeTools(t)
	srv := bustest.Start(t)
	srv.Provision(t)
	names := srv.Names()
	js := srv.JetStream(t)
	t.Setenv("AGENT_NAME", "NodeBinding")
	agent := startProcess(t, node, "binding_agent.js", srv.URL())

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for !strings.Contains(agent.Out.String(), "ready") {
		select {
		case <-agent.Exited:
			t.Fatalf("binding_agent.js exited: %v\n%s", agent.Err, agent.Out.String())
		case <-ctx.Done():
			t.Fatalf("binding_agent.js not ready:\n%s", agent.Out.String())
		case <-time.After(50 * time.Millisecond): // polling its output with a deadline
		}
	}

	d := client.NewDispatcher(js, names, "agentmesh/test")
	meta := client.DispatchMeta{ConversationID: "conv-binding"}
	ev, err := d.Event("NodeBinding", schemas.TaskRequest{Instruction: "echo"}, &meta)
	if err != nil {
		t.Fatal(err)
	}
	ev.Subject = bindingValue
	ev.SetExt("label", bindingValue)
	subject, _ := names.Task("NodeBinding")
	msg, err := bus.Encode(subject, ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := msg.Header.Get("ce-label"); got != bus.EncodeHeaderValue(bindingValue) || strings.ContainsAny(got, ` "`) {
		t.Fatalf("ce-label = %q, want it percent-encoded", got)
	}
	msg.Header.Set(jetstream.MsgIDHeader, ev.ID)
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	res, err := d.Await(ctx, meta.ReplyTo, meta.TaskID)
	if err != nil {
		t.Fatalf("no readable answer from binding_agent.js: %v\n%s", err, agent.Out.String())
	}
	var echoed struct{ Subject, Label string }
	if err := json.Unmarshal([]byte(res.Result.Summary), &echoed); err != nil {
		t.Fatalf("summary %q: %v", res.Result.Summary, err)
	}
	if echoed.Subject != bindingValue || echoed.Label != bindingValue {
		t.Errorf("the JavaScript SDK read subject %q and label %q, want %q", echoed.Subject, echoed.Label, bindingValue)
	}
	if got := res.Event.Ext("label"); got != bindingValue {
		t.Errorf("the result's label extension decoded to %q, want %q", got, bindingValue)
	}
	if res.Event.Time.IsZero() || res.Event.Ext(bus.ExtConversationID) != "conv-binding" || !res.Result.Success {
		t.Errorf("result event %+v, result %+v", res.Event, res.Result)
	}
}

// TestBindingNodeClient: a client built on the JavaScript cloudevents SDK
// (binding_client.js) calls a Go agent with every header value over-encoded
// in lower-case hex: the agent runtime reads the task and answers on the
// decoded replyto, copying the decoded conversationid and traceparent. A
// second task with an overlong encoding (%C0%A0) is refused with
// malformed_event naming the bytes.
func TestBindingNodeClient(t *testing.T) {
	node := nodeTools(t)
	srv := bustest.Start(t)
	srv.Provision(t)
	upper := agents.Func(schemas.AgentContract{
		Name: "Upper", Capability: schemas.CapTransformation, Description: "upper-cases a text",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		s, err := ec.Text("text")
		if err != nil {
			return schemas.AgentResult{}, err
		}
		return schemas.AgentResult{Success: true, Summary: "upper-cased",
			Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue(strings.ToUpper(s), "Upper")}}, nil
	})
	meshtest.Serve(t, srv.Conn(t), upper)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Setenv("AGENT", "Upper")
	c := startProcess(t, node, "binding_client.js", srv.URL())
	select {
	case <-c.Exited:
	case <-ctx.Done():
		t.Fatalf("binding_client.js did not finish:\n%s", c.Out.String())
	}
	if c.Err != nil {
		t.Fatalf("binding_client.js: %v\n%s", c.Err, c.Out.String())
	}
	type answer struct {
		Case, Task, Type, Source, Time, TaskID, ConversationID, TraceParent string
		Data                                                                schemas.AgentResult
	}
	got := map[string]answer{}
	for line := range strings.Lines(c.Out.String()) {
		var a answer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("binding_client.js printed %q: %v", line, err)
		}
		got[a.Case] = a
	}
	ok := got["encoded"]
	var text string
	_ = ok.Data.Outputs["text"].Decode(&text)
	if !ok.Data.Success || text != "HÉLLO WÖRLD" {
		t.Errorf("encoded task: result %+v, want success with HÉLLO WÖRLD", ok.Data)
	}
	if ok.TaskID != ok.Task || ok.ConversationID != "conv-encoded" || ok.TraceParent != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Errorf("encoded task: taskid %q (task %q), conversationid %q, traceparent %q: the runtime did not decode the task's headers",
			ok.TaskID, ok.Task, ok.ConversationID, ok.TraceParent)
	}
	if _, err := time.Parse(time.RFC3339, ok.Time); err != nil {
		t.Errorf("the JavaScript SDK read the result's time as %q: %v", ok.Time, err)
	}
	bad := got["overlong"]
	if bad.Data.Success || bad.Data.Error == nil || bad.Data.Error.Code != schemas.CodeMalformedEvent ||
		!strings.Contains(bad.Data.Error.Message, "%C0%A0") || !strings.Contains(bad.Data.Error.Message, "ce-subject") {
		t.Errorf("overlong task: result %+v, want malformed_event naming ce-subject and %%C0%%A0", bad.Data)
	}
}
