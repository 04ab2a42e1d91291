package node_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/security/securetest"
)

// The Node agent on a secure mesh (JWT credentials of its own, TLS) with
// the official JavaScript client: it registers under its name, serves a
// client's direct call, and refuses a replyto outside its result subjects.
func TestNodeAgentSecure(t *testing.T) {
	nodeBin, errNode := exec.LookPath("node")
	npmBin, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("skipping the Node.js example: node and npm are not on PATH (install Node.js 20 or later to run it; CI does)")
	}
	npmInstall(t, npmBin)
	srv := securetest.Start(t)
	creds := srv.Creds(t, bus.Identity{Role: bus.RoleAgent, Name: agentName})
	agent := startProcess(t, nodeBin, "agent.js", srv.URL(), "NATS_CREDS="+creds, "NATS_CA="+srv.CA())

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg, err := client.NewRegistry(ctx, srv.Res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := reg.Wait(wctx, agentName, 1); err != nil {
		t.Fatalf("the Node agent never registered on the secure mesh: %v\n%s", err, agent.out.String())
	}

	alice := bus.Identity{Role: bus.RoleClient, Name: "alice"}
	js, err := jetstream.New(srv.Connect(t, alice))
	if err != nil {
		t.Fatal(err)
	}
	d := client.NewDispatcher(js, srv.Names, "alice")
	call := func(replyTo string) (string, error) {
		meta := client.DispatchMeta{TaskID: "t-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")}
		if replyTo == "" {
			replyTo = srv.Names.ClientResult(agentName, alice.Name, meta.TaskID)
		}
		meta.ReplyTo = replyTo
		_, err := d.Dispatch(ctx, agentName, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("one two three", "test")}}, meta)
		return meta.TaskID, err
	}
	id, err := call("")
	if err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithTimeout(ctx, 20*time.Second)
	defer acancel()
	res, err := d.Await(actx, srv.Names.ClientResult(agentName, alice.Name, id), id)
	if err != nil || !res.Result.Success {
		t.Fatalf("alice's call of the Node agent: %+v %v\n%s", res.Result, err, agent.out.String())
	}
	// A replyto into conversation state: the agent answers malformed_event
	// on its own result subject instead.
	id, err = call(srv.Names.KVPut(srv.Names.ConversationsBucket(), "victim"))
	if err != nil {
		t.Fatal(err)
	}
	var raw *jetstream.RawStreamMsg
	for raw == nil {
		raw, _ = srv.Res.Results.GetLastMsgForSubject(ctx, srv.Names.Result(agentName, id))
		if ctx.Err() != nil {
			t.Fatalf("no answer to the task with a foreign replyto\n%s", agent.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	ev, _ := bus.Decode(&nats.Msg{Subject: raw.Subject, Header: raw.Header, Data: raw.Data})
	var r schemas.AgentResult
	if err := ev.DataAs(&r); err != nil || r.Error == nil || r.Error.Code != schemas.CodeMalformedEvent || !strings.Contains(r.Error.Message, "replyto") {
		t.Fatalf("answer %+v (%v), want malformed_event naming the replyto", r, err)
	}
	if _, err := srv.Res.Conversations.Get(ctx, "victim"); err == nil {
		t.Fatal("the conversation victim was written")
	}
}
