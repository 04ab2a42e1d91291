package typescript_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/internal/nodetest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/security/securetest"
)

// TestTypeScriptSDKSecure runs the TypeScript example agent and a
// TypeScript client on a secure mesh (TLS, a credentials file each) next to
// the Go TextAgent: the TypeScript agent checks who signed each task (a
// Go client's signed task runs, a task naming another client's result
// subject is answered forbidden on the signer's own, an unsigned one is
// refused on mesh.dead.<agent>.refused and dead-lettered), and the Go
// agent accepts the tasks the TypeScript client and a TypeScript agent's
// call signed.
func TestTypeScriptSDKSecure(t *testing.T) {
	node, npm, err := nodetest.Tools()
	if err != nil {
		t.Skipf("skipping the TypeScript SDK: %v", err)
	}
	nodetest.Install(t, npm, ".")
	nodetest.Build(t, npm, ".")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := securetest.Start(t)
	meshtest.Serve(t, srv.Connect(t, bus.Identity{Role: bus.RoleAgent, Name: text.Name}), text.New())
	agent := startNode(t, node, srv.URL(), "dist/examples/wordlength.js",
		"NATS_CREDS="+srv.Creds(t, bus.Identity{Role: bus.RoleAgent, Name: exampleAgent}), "NATS_CA="+srv.CA())
	reg, err := client.NewRegistry(ctx, srv.Res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	err = reg.Wait(wctx, exampleAgent, 1)
	wcancel()
	if err != nil {
		t.Fatalf("the TypeScript agent never registered on the secure mesh: %v\n%s", err, agent.Out.String())
	}

	alice := bus.Identity{Role: bus.RoleClient, Name: "alice"}
	aliceNC := srv.Connect(t, alice)
	js, err := jetstream.New(aliceNC)
	if err != nil {
		t.Fatal(err)
	}
	d := client.NewDispatcher(js, srv.Names, "alice")
	task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("one two three", "test")}}
	lastResult := func(subject string) schemas.AgentResult {
		t.Helper()
		var raw *jetstream.RawStreamMsg
		if !fixture.Until(ctx.Done(), func() bool { // the test's deadline
			var err error
			raw, err = srv.Res.Results.GetLastMsgForSubject(ctx, subject)
			return err == nil
		}) {
			t.Fatalf("no result on %s\nagent output:\n%s", subject, agent.Out.String())
		}
		ev, err := bus.Decode(&nats.Msg{Subject: raw.Subject, Header: raw.Header, Data: raw.Data})
		var r schemas.AgentResult
		if err == nil {
			err = ev.DataAs(&r)
		}
		if err != nil {
			t.Fatalf("result on %s: %v", subject, err)
		}
		return r
	}

	t.Run("a signed task from a Go client runs", func(t *testing.T) {
		meta := client.DispatchMeta{TaskID: "t-alice-1", ReplyTo: srv.Names.ClientResult(exampleAgent, alice.Name, "t-alice-1")}
		if _, err := d.Dispatch(ctx, exampleAgent, task, meta); err != nil {
			t.Fatal(err)
		}
		if r := lastResult(meta.ReplyTo); !r.Success || r.Summary != "measured 3 words" {
			t.Fatalf("alice's task: %+v", r)
		}
	})

	t.Run("a client's task reads the client's own files", func(t *testing.T) {
		bucket := srv.Names.ClientFilesStore(alice.Name)
		srv.ClientFiles(t, alice.Name)
		obs, err := js.ObjectStore(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := resolvers.NewObjectStore(obs, resolvers.WithStoreName(bucket)).Store(ctx, strings.NewReader("four words of alice"), "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		docs := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"documents": schemas.FilesValue(schemas.FromIDs("documents", ref.ID), "alice")}}
		meta := client.DispatchMeta{TaskID: "t-alice-files", ReplyTo: srv.Names.ClientResult(exampleAgent, alice.Name, "t-alice-files")}
		if _, err := d.Dispatch(ctx, exampleAgent, docs, meta); err != nil {
			t.Fatal(err)
		}
		if r := lastResult(meta.ReplyTo); !r.Success || r.Summary != "measured 4 words" {
			t.Fatalf("alice's task on her file %s in %s: %+v %+v", ref.ID, bucket, r, r.Error)
		}
	})

	t.Run("a replyto into another client's results is answered forbidden on the signer's own", func(t *testing.T) {
		meta := client.DispatchMeta{TaskID: "t-alice-2", ReplyTo: srv.Names.ClientResult(exampleAgent, "bob", "t-alice-2")}
		if _, err := d.Dispatch(ctx, exampleAgent, task, meta); err != nil {
			t.Fatal(err)
		}
		r := lastResult(srv.Names.ClientResult(exampleAgent, alice.Name, "t-alice-2"))
		if r.Success || r.Error == nil || r.Error.Code != schemas.CodeForbidden || !strings.Contains(r.Error.Message, "client-alice may only name a subject under") {
			t.Fatalf("answer %+v, want forbidden naming alice's space", r)
		}
		if _, err := srv.Res.Results.GetLastMsgForSubject(ctx, meta.ReplyTo); err == nil {
			t.Error("something was published on bob's result subject")
		}
	})

	t.Run("an unsigned task is refused on mesh.dead.<agent>.refused, dead-lettered and answered nowhere", func(t *testing.T) {
		// Alice reads the refusals of tasks no result subject can answer,
		// as any identity may, with a plain subscription.
		refused, _ := srv.Names.DeadRefused(exampleAgent)
		notices := make(chan *nats.Msg, 16)
		sub, err := aliceNC.ChanSubscribe(refused, notices)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		if err := aliceNC.Flush(); err != nil {
			t.Fatal(err)
		}
		meta := client.DispatchMeta{TaskID: "t-unsigned", ReplyTo: srv.Names.ClientResult(exampleAgent, alice.Name, "t-unsigned")}
		ev, err := d.Event(exampleAgent, task, &meta)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := bus.Encode("mesh.task."+exampleAgent, ev) // not signed
		if err != nil {
			t.Fatal(err)
		}
		ack, err := js.PublishMsg(ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		seq := strconv.FormatUint(ack.Sequence, 10)
		var n *nats.Msg
		for n == nil {
			select {
			case m := <-notices:
				if m.Header.Get(bus.HeaderDeadSequence) == seq {
					n = m
				}
			case <-ctx.Done():
				t.Fatalf("no refusal of the task at sequence %s on %s\n%s", seq, refused, agent.Out.String())
			}
		}
		if code := n.Header.Get(bus.HeaderDeadCode); code != schemas.CodeForbidden {
			t.Errorf("notice code %q, want forbidden", code)
		}
		if reason := n.Header.Get(bus.HeaderDeadReason); !strings.Contains(reason, "task not signed by an identity of this mesh") {
			t.Errorf("notice reason %q", reason)
		}
		if n.Header.Get("ce-id") != "t-unsigned" || n.Header.Get(bus.HeaderDeadStream) != ack.Stream || len(n.Data) != 0 {
			t.Errorf("notice %v %q, want the task id, stream %s and no data", n.Header, n.Data, ack.Stream)
		}
		// Exactly the headers bus.RefusalNotice keeps: nothing else of the task.
		want := bus.RefusalNotice(refused, &nats.Msg{Header: n.Header}, "t-unsigned")
		for k := range n.Header {
			if want.Header.Get(k) == "" {
				t.Errorf("the notice carries header %s: %q", k, n.Header.Get(k))
			}
		}
		raw, err := srv.Res.Dead.GetLastMsgForSubject(ctx, "mesh.dead."+exampleAgent)
		if err != nil || raw.Header.Get("ce-id") != "t-unsigned" || raw.Header.Get(bus.HeaderDeadSequence) != seq {
			t.Fatalf("the dead letter of the unsigned task: %v %v", raw, err)
		}
		if code := raw.Header.Get(bus.HeaderDeadCode); code != schemas.CodeForbidden || !strings.Contains(raw.Header.Get(bus.HeaderDeadReason), "not signed") {
			t.Errorf("dead letter code %q reason %q", code, raw.Header.Get(bus.HeaderDeadReason))
		}
		if _, err := srv.Res.Results.GetLastMsgForSubject(ctx, meta.ReplyTo); err == nil {
			t.Error("the unsigned task was answered")
		}
	})

	// Bob's run is his to follow: the orchestrator publishes its events on
	// mesh.events.<run>.<kind>.bob and the TypeScript agent its progress
	// on mesh.events.<run>.task.bob (the task's owner), the only events a
	// secure mesh lets bob read.
	o, err := orchestrator.New(srv.Connect(t, bus.Identity{Role: bus.RoleOrchestrator}))
	if err != nil {
		t.Fatal(err)
	}
	meshtest.RunOrchestrator(t, o)

	t.Run("the Go agent takes tasks the TypeScript client and a TypeScript agent's call signed", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, node, "--input-type=module", "-e", secureScript)
		cmd.Env = append(os.Environ(), "NATS_URL="+srv.URL(), "NATS_CA="+srv.CA(),
			"BOB_CREDS="+srv.Creds(t, bus.Identity{Role: bus.RoleClient, Name: "bob"}),
			"CALLER_CREDS="+srv.Creds(t, bus.Identity{Role: bus.RoleAgent, Name: "TsCaller"}))
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "text: true HELLO SECURE MESH") || !strings.Contains(string(out), "caller: true ESREVER") ||
			!strings.Contains(string(out), "run: completed, progress: asking TextAgent") {
			t.Fatalf("TypeScript on the secure mesh: %v\n%s", err, out)
		}
	})
}

// secureScript connects as client bob and as agent TsCaller (whose work
// calls TextAgent), then sends bob's tasks to TextAgent and to TsCaller.
const secureScript = `import { connect } from "@nats-io/transport-node";
import { Credentials, MeshClient, connectOptions, defineAgent, run } from "./dist/src/index.js";

async function as(credsFile, name) {
  process.env.NATS_CREDS = credsFile;
  const nc = await connect(connectOptions(name));
  return { nc, creds: Credentials.fromFile(credsFile) };
}
const caller = await as(process.env.CALLER_CREDS, "TsCaller");
const agent = defineAgent({
  name: "TsCaller", capability: "TRANSFORMATION", description: "reverses a text through TextAgent",
  inputs: [{ name: "text", data_type: "TEXT", required: true }], outputs: [{ name: "text", data_type: "TEXT" }],
}, async (t) => {
  t.progress("asking TextAgent");
  const r = await t.call("TextAgent", { inputs: { text: { data_type: "TEXT", value: t.value("text") } }, params: { op: "reverse" } });
  return { outputs: { text: r.outputs.text.value } };
});
const running = await run(caller.nc, agent, { handleSignals: false, credentials: caller.creds });
const bob = await as(process.env.BOB_CREDS, "bob");
const mc = new MeshClient(bob.nc, { credentials: bob.creds });
const up = await mc.task("TextAgent", { inputs: { text: { data_type: "TEXT", value: "hello secure mesh" } }, params: { op: "upper" } });
console.log("text:", up.result.success, up.result.outputs?.text?.value ?? JSON.stringify(up.result.error));
const rev = await mc.task("TsCaller", { inputs: { text: { data_type: "TEXT", value: "reverse" } } });
console.log("caller:", rev.result.success, rev.result.outputs?.text?.value?.toUpperCase() ?? JSON.stringify(rev.result.error));
// Bob's run, followed where only he reads: its step events and the agent's progress.
const progress = [];
let final;
for (const until = Date.now() + 30_000; Date.now() < until; ) { // the orchestrator learns of TsCaller from the registry
  const id = await mc.submit({ name: "bobs", steps: [{ id: "rev", agent: "TsCaller", inputs: { text: "text:his" } }] });
  final = await mc.followRun(id, { waitMs: 30_000, onEvent: (e) => { if (e.type === "io.agentmesh.task.progress") progress.push(e.data.message); } });
  if (final.status === "completed" || final.code !== "unknown_agent") break;
}
console.log("run: " + final.status + ", progress: " + progress.join("; "));
await running.stop();
await caller.nc.drain();
await bob.nc.drain();
`
