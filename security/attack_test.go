package security_test

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

var (
	alice   = bus.Identity{Role: bus.RoleClient, Name: "alice"}
	mallory = bus.Identity{Role: bus.RoleClient, Name: "mallory"}
	evil    = bus.Identity{Role: bus.RoleAgent, Name: "EvilAgent"}
)

// directCall sends a task to agent as client c and returns its result, read
// where only c may read it.
func directCall(t *testing.T, m *secureMesh, c *conn, who bus.Identity, agent string, task schemas.TaskRequest) client.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	d := client.NewDispatcher(c.js, m.names, "test/"+who.User())
	meta := client.DispatchMeta{}
	meta.TaskID = "t-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + time.Now().Format("150405.000000000")[7:]
	meta.ReplyTo = m.names.ClientResult(agent, who.Name, meta.TaskID)
	if _, err := d.Dispatch(ctx, agent, task, meta); err != nil {
		t.Fatal(err)
	}
	res, err := d.Await(ctx, meta.ReplyTo, meta.TaskID)
	if err != nil {
		t.Fatalf("direct call of %s as %s: %v", agent, who.User(), err)
	}
	return res
}

func upper(s string) schemas.TaskRequest {
	return schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue(s, "test")}, Params: map[string]any{"op": "upper"}}
}

// Contract hijack: nobody but TextAgent writes registry keys under its
// name; an agent's keys carry its own name only.
func TestAttackContractHijack(t *testing.T) {
	m := startSecure(t)
	m.serve(t, text.New())
	for _, id := range []bus.Identity{mallory, evil} {
		c := m.connect(t, id)
		msg := nats.NewMsg(m.names.KVPut(m.names.AgentsBucket(), text.Name+".evil"))
		msg.Data = []byte(`{"contract":{"name":"TextAgent","outputs":[{"name":"x","data_type":"FILE_IDS"}]}}`)
		c.publishDenied(t, msg)
		ann, _ := m.names.Announce(text.Name)
		if err := c.Publish(ann, msg.Data); err != nil {
			t.Fatal(err)
		}
		if id.Role == bus.RoleAgent {
			c.denied(t, "Publish", ann)
		}
	}
	// The legitimate path: TextAgent's own key, and EvilAgent's under its name.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg, err := client.NewRegistry(ctx, m.res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	if err := reg.Wait(ctx, text.Name, 1); err != nil {
		t.Fatal(err)
	}
	info, _ := reg.Lookup(text.Name)
	if len(info.Instances) != 1 || len(info.Contract.Outputs) != 1 || info.Contract.Outputs[0].DataType != schemas.TypeText {
		t.Fatalf("TextAgent in the registry: %+v", info)
	}
	e := m.connect(t, evil)
	kv, err := e.js.KeyValue(ctx, m.names.AgentsBucket())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, evil.Name+".i1", []byte(`{}`)); err != nil {
		t.Fatalf("EvilAgent writing its own key: %v", err)
	}
}

// Task theft: no one but TextAgent pulls from its consumer, subscribes to
// its tasks, or makes a consumer of its own on them.
func TestAttackTaskTheft(t *testing.T) {
	m := startSecure(t)
	m.serve(t, text.New())
	task, _ := m.names.Task(text.Name)
	tasks := m.names.TasksStream()
	for _, id := range []bus.Identity{mallory, evil} {
		c := m.connect(t, id)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := c.js.Consumer(ctx, tasks, text.Name)
		cancel()
		if err == nil {
			t.Fatalf("%s looked up TextAgent's consumer", id.User())
		}
		c.denied(t, "Publish", "$JS.API.CONSUMER.INFO."+tasks+"."+text.Name)
		if _, err := c.Request("$JS.API.CONSUMER.MSG.NEXT."+tasks+"."+text.Name, []byte(`{"batch":1}`), 300*time.Millisecond); err == nil {
			t.Fatalf("%s pulled a TextAgent task", id.User())
		}
		c.denied(t, "Publish", "$JS.API.CONSUMER.MSG.NEXT."+tasks+"."+text.Name)
		ctx, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err = c.js.CreateConsumer(ctx, tasks, jetstream.ConsumerConfig{Name: "steal", FilterSubject: task})
		cancel()
		if err == nil {
			t.Fatalf("%s made a consumer on TextAgent's tasks", id.User())
		}
		c.denied(t, "Publish", "$JS.API.CONSUMER.CREATE."+tasks+".steal."+task)
		if _, err := c.SubscribeSync(task); err != nil {
			t.Fatal(err)
		}
		c.denied(t, "Subscription", task)
		if _, err := c.SubscribeSync("_INBOX.>"); err != nil {
			t.Fatal(err)
		}
		c.denied(t, "Subscription", "_INBOX.>")
	}
	// The legitimate path: alice's direct call is served by TextAgent.
	a := m.connect(t, alice)
	if res := directCall(t, m, a, alice, text.Name, upper("hello")); !res.Result.Success || !strings.Contains(string(res.Result.Outputs["text"].Value), "HELLO") {
		t.Fatalf("alice's direct call: %+v", res.Result)
	}
}

// Forged results: only the agent a task went to answers it; the
// orchestrator ignores a result for a step of another agent.
func TestAttackForgedResults(t *testing.T) {
	m := startSecure(t)
	m.serve(t, text.New())
	m.serve(t, agents.Func(schemas.AgentContract{Name: evil.Name, Version: "1.0.0", Capability: schemas.CapTransformation,
		Description: "an agent that forges results",
		Outputs:     []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.AgentResult{Success: true}, nil
		}))
	o := m.orchestrator(t, text.Name, evil.Name)
	a := m.connect(t, alice)
	spec := client.NewPipeline("forged").SeedValue("note", schemas.TypeText, "", "genuine").
		Step("shout", text.Name).Param("op", "upper").Param("delay_ms", 1500).Input("text", "seed.note").MustBuild()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run, err := client.SubmitPipeline(ctx, a.js, m.names.ForClient(alice.Name), spec, "", "alice")
	if err != nil {
		t.Fatal(err)
	}
	sd := waitSpec(t, o.Store(), run)
	taskID := pipelinespec.StepTaskID(run, "shout", 1, sd.Nonce) // the worst case: the attacker has the id
	forged := func(t *testing.T, subject string) *nats.Msg {
		res := schemas.AgentResult{Success: true, Agent: text.Name, Summary: "forged", Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue("FORGED", text.Name)}}
		ev, _ := bus.NewEvent(bus.TypeTaskCompleted, "/agentmesh/agents/TextAgent/x", res)
		ev.SetExt(bus.ExtTaskID, taskID)
		ev.SetExt(bus.ExtRunID, run)
		ev.SetExt(bus.ExtStepID, "shout")
		msg, err := bus.Encode(subject, ev)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	// A client and another agent on TextAgent's subject: refused by the server.
	m.connect(t, mallory).publishDenied(t, forged(t, m.names.OrchestratorResult(text.Name, run)))
	e := m.connect(t, evil)
	e.publishDenied(t, forged(t, m.names.OrchestratorResult(text.Name, run)))
	// EvilAgent on its own subject: accepted by the server, dropped by the
	// orchestrator, since the step went to TextAgent.
	if _, err := e.js.PublishMsg(ctx, forged(t, m.names.OrchestratorResult(evil.Name, run))); err != nil {
		t.Fatal(err)
	}
	st := waitRun(t, o.Store(), run)
	if st.Status != schemas.RunCompleted || st.Steps["shout"].Summary == "forged" {
		t.Fatalf("run %s: %s, step %+v", run, st.Status, st.Steps["shout"])
	}
	rec, err := o.Store().StepRecord(ctx, run, "shout")
	if err != nil || !strings.Contains(string(rec.Outputs["text"].Value), "GENUINE") {
		t.Fatalf("step record %+v (%v): want TextAgent's GENUINE", rec, err)
	}
}

// Confused deputy: a task cannot make an agent write into state; the
// server refuses it, and the agent refuses such a replyto before that,
// answering on the sender's own result subjects.
func TestAttackConfusedDeputy(t *testing.T) {
	m := startSecure(t)
	m.serve(t, text.New())
	m.orchestrator(t, text.Name)
	target := m.names.KVPut(m.names.ConversationsBucket(), "victim")
	// The agent's identity may not publish there at all.
	ag := m.connect(t, bus.Identity{Role: bus.RoleAgent, Name: text.Name})
	msg := nats.NewMsg(target)
	msg.Data = []byte(`{"slots":{}}`)
	ag.publishDenied(t, msg)
	// A task asking it to: refused by the agent with malformed_event.
	c := m.connect(t, mallory)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := client.NewDispatcher(c.js, m.names, "mallory")
	id, err := d.Dispatch(ctx, text.Name, upper("x"), client.DispatchMeta{ReplyTo: target})
	if err != nil {
		t.Fatal(err)
	}
	// The refusal goes to mallory's own result subjects, where the task's
	// signature says it came from.
	raw := waitLast(t, m.res.Results, m.names.ClientResult(text.Name, mallory.Name, id))
	ev, _ := bus.Decode(&nats.Msg{Subject: raw.Subject, Header: raw.Header, Data: raw.Data})
	var res schemas.AgentResult
	if err := ev.DataAs(&res); err != nil || res.Error == nil || res.Error.Code != schemas.CodeMalformedEvent || !strings.Contains(res.Error.Message, "replyto") {
		t.Fatalf("answer %+v (%v): want malformed_event naming the replyto", res, err)
	}
	if _, err := m.res.Conversations.Get(ctx, "victim"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("conversation victim: %v, want no such key", err)
	}
	// The legitimate path: the same task with alice's own result subject.
	a := m.connect(t, alice)
	if res := directCall(t, m, a, alice, text.Name, upper("ok")); !res.Result.Success {
		t.Fatalf("alice: %+v", res.Result)
	}
}

func waitLast(t *testing.T, s jetstream.Stream, subject string) *jetstream.RawStreamMsg {
	t.Helper()
	var raw *jetstream.RawStreamMsg
	var err error
	if !fixture.Within(fixture.WaitTimeout, func() bool {
		raw, err = s.GetLastMsgForSubject(context.Background(), subject)
		return err == nil
	}) {
		t.Fatalf("nothing on %s: %v", subject, err)
	}
	return raw
}

// Direct state access: a client reads and writes no conversation or run,
// nor another client's results; the orchestrator keeps state.
func TestAttackDirectStateAccess(t *testing.T) {
	m := startSecure(t)
	m.serve(t, text.New())
	o := m.orchestrator(t, text.Name)
	a := m.connect(t, alice)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	spec := client.NewPipeline("state").SeedValue("note", schemas.TypeText, "", "mine").
		Step("shout", text.Name).Param("op", "upper").Input("text", "seed.note").MustBuild()
	run, err := client.SubmitPipeline(ctx, a.js, m.names.ForClient(alice.Name), spec, "", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if st := waitRun(t, o.Store(), run); st.Status != schemas.RunCompleted {
		t.Fatalf("alice's run: %s", st.Status)
	}
	c := m.connect(t, mallory)
	for _, bucket := range []string{m.names.RunsBucket(), m.names.ConversationsBucket()} {
		kv, err := c.js.KeyValue(ctx, bucket) // binding reads stream metadata only
		if err != nil {
			t.Fatal(err)
		}
		short, scancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err = kv.Get(short, run)
		scancel()
		if err == nil {
			t.Fatalf("mallory read %s %s", bucket, run)
		}
		c.denied(t, "Publish", "$JS.API.DIRECT.GET.KV_"+bucket+".$KV."+bucket+"."+run)
		msg := nats.NewMsg(m.names.KVPut(bucket, run))
		msg.Data = []byte("garbage")
		c.publishDenied(t, msg)
	}
	// Another client's results: neither a subscription nor a consumer.
	if _, err := c.SubscribeSync(m.names.ClientResults(alice.Name)); err != nil {
		t.Fatal(err)
	}
	c.denied(t, "Subscription", m.names.ClientResults(alice.Name))
	short, scancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = c.js.OrderedConsumer(short, m.names.ResultsStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{m.names.ClientResults(alice.Name)}})
	scancel()
	if err == nil {
		t.Fatal("mallory read alice's results")
	}
	// The run's state is intact.
	rs := state.New(m.res.Conversations, m.res.Runs)
	if st, err := rs.Run(ctx, run); err != nil || st.Status != schemas.RunCompleted {
		t.Fatalf("run %s after the attacks: %v %v", run, st, err)
	}
}

// No credentials, or no trust in the server's CA: no connection.
func TestAttackNoAuthNoTLS(t *testing.T) {
	m := startSecure(t)
	_, err := bus.ConnectOptions{URL: m.URL(), TLSCA: m.CA()}.Connect(context.Background())
	if !errors.Is(err, bus.ErrAuth) {
		t.Fatalf("no credentials: %v, want an authorization error", err)
	}
	creds := m.Creds(t, alice)
	_, err = nats.Connect(m.URL(), nats.UserCredentials(creds))
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("no CA: %v, want a certificate error", err)
	}
	_, err = nats.Connect(m.URL(), nats.UserCredentials(creds), nats.Secure(&tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: false, ServerName: "not-the-server"}), nats.RootCAs(m.CA()))
	if err == nil {
		t.Fatal("a wrong server name was accepted")
	}
	// The legitimate path: credentials and the CA.
	nc, err := bus.ConnectOptions{URL: m.URL(), CredsFile: creds, TLSCA: m.CA()}.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !nc.TLSRequired() {
		t.Error("the connection is not TLS")
	}
	nc.Close()
}

// waitSpec waits until run's spec is stored.
func waitSpec(t *testing.T, store *state.Store, run string) *state.RunSpec {
	t.Helper()
	var sd *state.RunSpec
	var err error
	if !fixture.Within(fixture.WaitTimeout, func() bool {
		sd, err = store.Spec(context.Background(), run)
		return err == nil
	}) {
		t.Fatalf("run %s has no spec: %v", run, err)
	}
	return sd
}

// waitRun waits until run ends.
func waitRun(t *testing.T, store *state.Store, run string) *state.RunState {
	t.Helper()
	return meshtest.WaitRun(t, store, run, 20*time.Second)
}
