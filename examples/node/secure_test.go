package node_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/nodetest"
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
		t.Fatalf("the Node agent never registered on the secure mesh: %v\n%s", err, agent.Out.String())
	}

	alice := bus.Identity{Role: bus.RoleClient, Name: "alice"}
	js, err := jetstream.New(srv.Connect(t, alice))
	if err != nil {
		t.Fatal(err)
	}
	d := client.NewDispatcher(js, srv.Names, "alice")
	call := func(replyTo string) (string, error) {
		meta := client.DispatchMeta{TaskID: "t-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")}
		switch replyTo {
		case "":
			replyTo = srv.Names.ClientResult(agentName, alice.Name, meta.TaskID)
		case "default": // what a task without replyto is answered on
			replyTo = srv.Names.Result(agentName, meta.TaskID)
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
		t.Fatalf("alice's call of the Node agent: %+v %v\n%s", res.Result, err, agent.Out.String())
	}
	// A replyto into conversation state: the agent answers malformed_event
	// on alice's own result subject instead, where her signature says the
	// task came from (as the Go runtime does).
	id, err = call(srv.Names.KVPut(srv.Names.ConversationsBucket(), "victim"))
	if err != nil {
		t.Fatal(err)
	}
	r := answerOn(ctx, t, srv, srv.Names.ClientResult(agentName, alice.Name, id), agent)
	if r.Error == nil || r.Error.Code != schemas.CodeMalformedEvent || !strings.Contains(r.Error.Message, "replyto") {
		t.Fatalf("answer %+v, want malformed_event naming the replyto", r)
	}
	if _, err := srv.Res.Conversations.Get(ctx, "victim"); err == nil {
		t.Fatal("the conversation victim was written")
	}

	// Alice names bob's result subject, or none (the orchestrator's
	// mesh.result.<agent>.<taskid>): forbidden, answered on her own, and
	// nothing on the subject she named.
	for _, replyTo := range []string{srv.Names.ClientResult(agentName, "bob", "b-1"), "default"} {
		id, err := call(replyTo)
		if err != nil {
			t.Fatal(err)
		}
		r := answerOn(ctx, t, srv, srv.Names.ClientResult(agentName, alice.Name, id), agent)
		if r.Success || r.Error == nil || r.Error.Code != schemas.CodeForbidden || !strings.Contains(r.Error.Message, "client-alice") {
			t.Fatalf("replyto %s: answer %+v, want forbidden naming alice", replyTo, r)
		}
		named := replyTo
		if replyTo == "default" {
			named = srv.Names.Result(agentName, id)
		}
		if raw, err := srv.Res.Results.GetLastMsgForSubject(ctx, named); err == nil {
			t.Fatalf("the refused task was answered on %s: %s", named, raw.Data)
		}
	}

	// Tasks that are not signed by an identity of this mesh: refused with
	// forbidden on mesh.dead.<agent>.refused, which alice may read, naming
	// the task and the sequence its publish was stored at; none is run.
	refused, _ := srv.Names.DeadRefused(agentName)
	plain, err := nats.Connect(srv.URL(), nats.UserCredentials(srv.Creds(t, alice)), nats.RootCAs(srv.CA()), nats.CustomInboxPrefix(alice.InboxPrefix()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	notices := make(chan *nats.Msg, 16)
	sub, err := plain.ChanSubscribe(refused, notices)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := plain.Flush(); err != nil {
		t.Fatal(err)
	}
	task, _ := srv.Names.Task(agentName)
	unsignedTask := func(id string) *nats.Msg {
		ev, err := d.Event(agentName, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("pwned", "test")}},
			&client.DispatchMeta{TaskID: id, ReplyTo: srv.Names.ClientResult(agentName, alice.Name, id)})
		if err != nil {
			t.Fatal(err)
		}
		msg, err := bus.Encode(task, ev)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	tampered := unsignedTask("t-tampered")
	if err := bus.CredentialsOf(js.Conn()).Sign(tampered); err != nil {
		t.Fatal(err)
	}
	tampered.Data = []byte(strings.Replace(string(tampered.Data), "pwned", "PWNED", 1))
	forged := unsignedTask("t-forged")
	forged.Header.Set(bus.HeaderSender, "eyJhbGciOiJlZDI1NTE5In0.e30.c2ln")
	forged.Header.Set(bus.HeaderSignature, "c2lnbmF0dXJl")
	for _, tc := range []struct {
		name, id, reason string
		msg              *nats.Msg
	}{
		{"unsigned, as nats req sends it", "t-unsigned", "send it with agentmesh credentials", unsignedTask("t-unsigned")},
		{"signed, then changed", "t-tampered", "the signature of client-alice does not match the task", tampered},
		{"a JWT of no identity", "t-forged", "the sender JWT", forged},
	} {
		reply, err := plain.RequestMsg(tc.msg, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var ack struct {
			Seq uint64 `json:"seq"`
		}
		if err := json.Unmarshal(reply.Data, &ack); err != nil || ack.Seq == 0 {
			t.Fatalf("%s: not stored: %q", tc.name, reply.Data)
		}
		n := waitNotice(ctx, t, notices, ack.Seq, agent)
		if code := n.Header.Get(bus.HeaderDeadCode); code != schemas.CodeForbidden {
			t.Errorf("%s: code %q, want forbidden (the Go runtime's)", tc.name, code)
		}
		if reason := n.Header.Get(bus.HeaderDeadReason); !strings.Contains(reason, "task not signed by an identity of this mesh") || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: reason %q, want it to say %q", tc.name, reason, tc.reason)
		}
		if n.Header.Get("ce-id") != tc.id || len(n.Data) != 0 {
			t.Errorf("%s: notice %v %q, want the task id %s and no data", tc.name, n.Header, n.Data, tc.id)
		}
		if raw, err := srv.Res.Results.GetLastMsgForSubject(ctx, srv.Names.ClientResult(agentName, alice.Name, tc.id)); err == nil {
			t.Errorf("%s: the task was answered on alice's subject: %s", tc.name, raw.Data)
		}
	}
}

// answerOn waits for the result on subject and decodes it.
func answerOn(ctx context.Context, t *testing.T, srv *securetest.Server, subject string, agent *nodetest.Process) schemas.AgentResult {
	t.Helper()
	var raw *jetstream.RawStreamMsg
	if !fixture.Until(ctx.Done(), func() bool {
		raw, _ = srv.Res.Results.GetLastMsgForSubject(ctx, subject)
		return raw != nil
	}) {
		t.Fatalf("no answer on %s\n%s", subject, agent.Out.String())
	}
	ev, _ := bus.Decode(&nats.Msg{Subject: raw.Subject, Header: raw.Header, Data: raw.Data})
	var r schemas.AgentResult
	if err := ev.DataAs(&r); err != nil {
		t.Fatalf("the answer on %s: %v", subject, err)
	}
	return r
}

// waitNotice waits for the refusal notice of the task stored at seq.
func waitNotice(ctx context.Context, t *testing.T, notices <-chan *nats.Msg, seq uint64, agent *nodetest.Process) *nats.Msg {
	t.Helper()
	for {
		select {
		case n := <-notices:
			if n.Header.Get(bus.HeaderDeadSequence) == strconv.FormatUint(seq, 10) {
				return n
			}
		case <-ctx.Done():
			t.Fatalf("no refusal for the task at sequence %d\n%s", seq, agent.Out.String())
		}
	}
}
