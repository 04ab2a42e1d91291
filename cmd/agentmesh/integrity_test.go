package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// integrityMesh is a secure mesh of separate processes (`agentmesh server
// --secure`, `agentmesh orchestrator` and `agentmesh agent TextAgent`,
// each as its own identity) and, in the test, connections of two clients,
// alice (the attacker) and bob, and of admin (to read state).
type integrityMesh struct {
	url, ca    string
	plain      bus.Names
	alice, bob *clientConn
	store      *state.Store
	res        *bus.Resources // bound as admin
	admin      *nats.Conn
}

type clientConn struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	names bus.Names // its own request subjects
	creds string    // its credentials file, for the agentmesh commands
	disp  *client.Dispatcher
	errs  chan error // the server's permission errors
}

func startIntegrityMesh(t *testing.T) *integrityMesh {
	t.Helper()
	url, store := startSecureServer(t)
	m := &integrityMesh{url: url, ca: filepath.Join(store, "secure", "ca.pem"), plain: bus.MustNames("")}
	orch := exec.Command(agentBinary(t), "orchestrator", "--nats", url, "--creds", issueCreds(t, store, "orchestrator"), "--tls-ca", m.ca)
	orch.Env = cleanEnv()
	proctest.Start(t, orch, regexp.MustCompile(`orchestrator ready`)).WaitReady(t)
	startAgentProc(t, url, "--creds", issueCreds(t, store, "agent", "TextAgent"), "--tls-ca", m.ca, "--concurrency", "4")
	m.alice = m.client(t, issueCreds(t, store, "client", "alice"), "alice")
	m.bob = m.client(t, issueCreds(t, store, "client", "bob"), "bob")
	admin := m.connect(t, filepath.Join(store, "secure", "creds", "admin.creds"))
	js, _ := jetstream.New(admin)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := bus.Provision(ctx, js, m.plain, bus.ProvisionOptions{BindOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	m.store, m.res, m.admin = state.New(res.Conversations, res.Runs), res, admin
	return m
}

func (m *integrityMesh) connect(t *testing.T, creds string) *nats.Conn {
	t.Helper()
	nc, err := bus.ConnectOptions{URL: m.url, CredsFile: creds, TLSCA: m.ca}.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func (m *integrityMesh) client(t *testing.T, creds, name string) *clientConn {
	t.Helper()
	c := &clientConn{nc: m.connect(t, creds), names: m.plain.ForClient(name), creds: creds, errs: make(chan error, 64)}
	c.nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case c.errs <- err:
		default:
		}
	})
	c.js, _ = jetstream.New(c.nc)
	c.disp = client.NewDispatcher(c.js, m.plain, name)
	return c
}

// denied waits for the server's permissions violation on subject.
func (c *clientConn) denied(t *testing.T, subject string) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case err := <-c.errs:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), subject) {
				return
			}
		case <-timeout:
			t.Fatalf("no permissions violation for %s", subject)
		}
	}
}

func upperTask(s string, delayMS int) schemas.TaskRequest {
	return schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue(s, "test")},
		Params: map[string]any{"op": "upper", "delay_ms": delayMS}}
}

// waitRunEnd polls run (as admin) until it ends.
func (m *integrityMesh) waitRunEnd(t *testing.T, run string) *state.RunState {
	t.Helper()
	return meshtest.WaitRun(t, m.store, run, 30*time.Second)
}

// stepText is the text output step of run recorded.
func (m *integrityMesh) stepText(t *testing.T, run, step string) string {
	t.Helper()
	rec, err := m.store.StepRecord(context.Background(), run, step)
	if err != nil {
		t.Fatalf("step %s of run %s: %v", step, run, err)
	}
	return string(rec.Outputs["text"].Value)
}

// forbidden awaits the failed result of code forbidden an agent answers
// c's refused task taskID with, on c's own result subject.
func (c *clientConn) forbidden(t *testing.T, agent, taskID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.disp.Await(ctx, c.names.ClientResult(agent, c.names.Client(), taskID), taskID)
	if err != nil {
		t.Fatalf("no answer to %s's refused task %s on its own result subject: %v", c.names.Client(), taskID, err)
	}
	if res.Result.Success || res.Result.Error == nil || res.Result.Error.Code != schemas.CodeForbidden {
		t.Fatalf("answer to %s's task %s: %+v, want code forbidden", c.names.Client(), taskID, res.Result)
	}
}

// On a secure mesh of separate processes, client alice attacks client
// bob's runs, conversation and direct calls; each attack is refused and
// bob's requests have their genuine outcomes.
func TestBinarySecureIntegrity(t *testing.T) {
	m := startIntegrityMesh(t)

	// A task sent ahead of a step under the id the step's task will have
	// (the old <run>-<step>-1), with its Nats-Msg-Id and the run's result
	// subject: the orchestrator's own task must not be dropped as a
	// duplicate, nor alice's result applied.
	t.Run("forged step task ahead of dispatch", func(t *testing.T) {
		const run = "bob-ahead"
		spec := client.NewPipeline("ahead").SeedValue("note", schemas.TypeText, "", "genuine").
			Step("first", "TextAgent").Param("op", "upper").Param("delay_ms", 1500).Input("text", "seed.note").
			Then("shout", "TextAgent").Param("op", "upper").Input("text", "seed.note").MustBuild()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := client.SubmitPipeline(ctx, m.bob.js, m.bob.names, spec, run, "bob"); err != nil {
			t.Fatal(err)
		}
		guessed := run + "-shout-1"
		meta := client.DispatchMeta{TaskID: guessed, ReplyTo: m.plain.OrchestratorResult("TextAgent", run), RunID: run, StepID: "shout"}
		if _, err := m.alice.disp.Dispatch(ctx, "TextAgent", upperTask("pwned by alice", 0), meta); err != nil {
			t.Fatal(err)
		}
		st := m.waitRunEnd(t, run)
		if got := m.stepText(t, run, "shout"); st.Status != schemas.RunCompleted || !strings.Contains(got, "GENUINE") || strings.Contains(got, "PWNED") {
			t.Fatalf("bob's run %s: %s, step shout %s: want it completed with GENUINE", run, st.Status, got)
		}
		if st.Steps["shout"].TaskID == guessed {
			t.Errorf("step shout ran as task %s, the id alice guessed", guessed)
		}
		m.alice.forbidden(t, "TextAgent", guessed) // and alice hears why
	})

	// A task sent while a step runs, under the step's task id but another
	// Nats-Msg-Id, answered before the real one. Bob's events are his
	// alone (mesh.events.<run>.pipeline.bob): the test reads the id as
	// admin, as if it had leaked to alice.
	t.Run("forged step task in flight", func(t *testing.T) {
		const run = "bob-inflight"
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sub, err := m.admin.SubscribeSync(m.plain.EventsOf(run))
		if err != nil {
			t.Fatal(err)
		}
		spec := client.NewPipeline("inflight").SeedValue("note", schemas.TypeText, "", "genuine").
			Step("slow", "TextAgent").Param("op", "upper").Param("delay_ms", 2000).Input("text", "seed.note").MustBuild()
		if _, err := client.SubmitPipeline(ctx, m.bob.js, m.bob.names, spec, run, "bob"); err != nil {
			t.Fatal(err)
		}
		var taskID string
		for taskID == "" {
			msg, err := sub.NextMsgWithContext(ctx)
			if err != nil {
				t.Fatalf("no step event of run %s: %v", run, err)
			}
			ev, _ := bus.Decode(msg)
			var se schemas.StepEvent
			if ev.DataAs(&se) == nil && se.Step == "slow" && se.Status == schemas.StepRunning {
				taskID = se.TaskID
			}
		}
		meta := client.DispatchMeta{TaskID: taskID, ReplyTo: m.plain.OrchestratorResult("TextAgent", run), RunID: run, StepID: "slow"}
		ev, err := m.alice.disp.Event("TextAgent", upperTask("pwned by alice", 0), &meta)
		if err != nil {
			t.Fatal(err)
		}
		task, _ := m.plain.Task("TextAgent")
		msg, err := bus.Encode(task, ev)
		if err != nil {
			t.Fatal(err)
		}
		msg.Header.Set(jetstream.MsgIDHeader, "alice-"+taskID)
		if err := bus.SignTask(m.alice.nc, msg); err != nil {
			t.Fatal(err)
		}
		if _, err := m.alice.js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
		st := m.waitRunEnd(t, run)
		if got := m.stepText(t, run, "slow"); st.Status != schemas.RunCompleted || !strings.Contains(got, "GENUINE") || strings.Contains(got, "PWNED") {
			t.Fatalf("bob's run %s: %s, step slow %s: want it completed with GENUINE", run, st.Status, got)
		}
		m.alice.forbidden(t, "TextAgent", taskID)
	})

	// Alice answers bob's approval step: on the plain resolve subject the
	// server refuses her; on her own the orchestrator does (not her run),
	// on her own events subject (bob's are not hers to read).
	t.Run("approval of another client's run", func(t *testing.T) {
		const run = "bob-approval"
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		events, err := m.alice.nc.SubscribeSync(m.alice.names.Events(run, "pipeline"))
		if err != nil {
			t.Fatal(err)
		}
		spec := client.NewPipeline("approval").SeedValue("note", schemas.TypeText, "", "genuine").
			Approval("gate", "ship it?", time.Minute, "reject").
			Then("shout", "TextAgent").Param("op", "upper").Input("text", "seed.note").MustBuild()
		if _, err := client.SubmitPipeline(ctx, m.bob.js, m.bob.names, spec, run, "bob"); err != nil {
			t.Fatal(err)
		}
		m.waitStep(t, run, "gate", schemas.StepWaiting)
		approve := pipelinespec.Resolution{RunID: run, Step: "gate", Decision: "approve", By: "alice"}
		short, scancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = client.ResolveStep(short, m.alice.js, m.plain, approve, "alice")
		scancel()
		if err == nil {
			t.Error("alice resolved on the plain subject " + m.plain.PipelineResolve())
		} else {
			m.alice.denied(t, m.plain.PipelineResolve())
		}
		req, err := client.ResolveStep(ctx, m.alice.js, m.alice.names, approve, "alice")
		if err != nil {
			t.Fatal(err)
		}
		for {
			msg, err := events.NextMsgWithContext(ctx)
			if err != nil {
				t.Fatalf("no refusal of alice's resolution %s: %v", req, err)
			}
			ev, _ := bus.Decode(msg)
			var ref pipelinespec.ResolveRefusal
			if ev.Type == bus.TypeResolveRefused && ev.DataAs(&ref) == nil && ref.Request == req {
				if ref.Code != schemas.CodeForbidden {
					t.Fatalf("alice's resolution refused with %+v, want code forbidden", ref)
				}
				break
			}
		}
		if st, err := m.store.Run(ctx, run); err != nil || st.Steps["gate"].Status != schemas.StepWaiting {
			t.Fatalf("after alice's answers, step gate: %+v %v; want it still waiting", st.Steps["gate"], err)
		}
		// Bob's own answer is taken.
		bobApprove := approve
		bobApprove.By = "bob"
		if _, err := client.ResolveStep(ctx, m.bob.js, m.bob.names, bobApprove, "bob"); err != nil {
			t.Fatal(err)
		}
		if st := m.waitRunEnd(t, run); st.Status != schemas.RunCompleted {
			t.Fatalf("bob's run after his approval: %s %s", st.Status, st.Error)
		}
	})

	// Alice adds a turn to bob's conversation by its id.
	t.Run("turn in another client's conversation", func(t *testing.T) {
		const conv = "bob-conv"
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, _, err := client.Turn(ctx, m.bob.js, m.bob.names, conv, "count the words in hello world", "bob", nil, nil); err != nil {
			t.Fatal(err)
		}
		short, scancel := context.WithTimeout(ctx, 2*time.Second)
		_, _, err := client.SendChat(short, m.alice.js, m.plain, conv, "PWNED BY ALICE", "alice")
		scancel()
		if err == nil {
			t.Error("alice sent a chat request on the plain subject " + m.plain.ChatRequest())
		} else {
			m.alice.denied(t, m.plain.ChatRequest())
		}
		resp, _, err := client.Turn(ctx, m.alice.js, m.alice.names, conv, "PWNED BY ALICE", "alice", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != schemas.CodeForbidden {
			t.Fatalf("alice's turn in bob's conversation: %+v, want code forbidden", resp)
		}
		if _, _, err := client.Turn(ctx, m.bob.js, m.bob.names, conv, "count the words in good bye", "bob", nil, nil); err != nil {
			t.Fatal(err)
		}
		st, err := m.store.Conversation(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		if st.Turns != 2 {
			t.Errorf("bob's conversation has %d turns, want his 2", st.Turns)
		}
		for _, h := range st.History {
			if strings.Contains(h.Text, "PWNED") {
				t.Errorf("alice's message is in bob's conversation: %+v", h)
			}
		}
	})

	// Alice makes TextAgent publish into bob's result subjects.
	t.Run("replyto into another client's results", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		const id = "bob-x-1"
		bobs := m.plain.ClientResult("TextAgent", "bob", id)
		if _, err := m.alice.disp.Dispatch(ctx, "TextAgent", upperTask("pwned by alice", 0), client.DispatchMeta{TaskID: id, ReplyTo: bobs}); err != nil {
			t.Fatal(err)
		}
		m.alice.forbidden(t, "TextAgent", id)
		// Unsigned (as any NATS client could send it): dead-lettered.
		ev, err := m.alice.disp.Event("TextAgent", upperTask("pwned by alice", 0), &client.DispatchMeta{TaskID: "bob-x-2", ReplyTo: m.plain.ClientResult("TextAgent", "bob", "bob-x-2")})
		if err != nil {
			t.Fatal(err)
		}
		task, _ := m.plain.Task("TextAgent")
		msg, err := bus.Encode(task, ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.alice.js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
		dead, _ := m.plain.Dead("TextAgent")
		if !fixture.Until(ctx.Done(), func() bool {
			var raw *jetstream.RawStreamMsg
			raw, err = m.res.Dead.GetLastMsgForSubject(ctx, dead)
			return err == nil && raw.Header.Get("ce-id") == "bob-x-2"
		}) {
			t.Fatalf("the unsigned task was not dead-lettered on %s: %v", dead, err)
		}
		for _, subject := range []string{bobs, m.plain.ClientResult("TextAgent", "bob", "bob-x-2")} {
			if raw, err := m.res.Results.GetLastMsgForSubject(ctx, subject); !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Errorf("on bob's %s: %v %v, want nothing", subject, raw, err)
			}
		}
		// Bob's own calls are answered.
		if res := m.bob.call(t, "bob-own-1", "bob's", 0); !strings.Contains(string(res.Outputs["text"].Value), "BOB'S") {
			t.Fatalf("bob's call: %+v", res)
		}
	})

	// Alice sends a task under the id of bob's task in flight (events show
	// it), to her own results, answered first: both are answered, each
	// with its own result.
	t.Run("same task id as another client's", func(t *testing.T) {
		const id = "bob-shared-1"
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		bobs := m.bob.names.ClientResult("TextAgent", "bob", id)
		if _, err := m.bob.disp.Dispatch(ctx, "TextAgent", upperTask("bob's", 1500), client.DispatchMeta{TaskID: id, ReplyTo: bobs}); err != nil {
			t.Fatal(err)
		}
		meta := client.DispatchMeta{TaskID: id, ReplyTo: m.alice.names.ClientResult("TextAgent", "alice", id)}
		ev, err := m.alice.disp.Event("TextAgent", upperTask("alice's", 0), &meta)
		if err != nil {
			t.Fatal(err)
		}
		task, _ := m.plain.Task("TextAgent")
		msg, err := bus.Encode(task, ev)
		if err != nil {
			t.Fatal(err)
		}
		msg.Header.Set(jetstream.MsgIDHeader, "alice-"+id) // the stream would drop a second bob-shared-1
		if err := bus.SignTask(m.alice.nc, msg); err != nil {
			t.Fatal(err)
		}
		if _, err := m.alice.js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
		mine, err := m.alice.disp.Await(ctx, meta.ReplyTo, id)
		if err != nil || !strings.Contains(string(mine.Result.Outputs["text"].Value), "ALICE'S") {
			t.Fatalf("alice's task: %+v %v", mine.Result, err)
		}
		his, err := m.bob.disp.Await(ctx, bobs, id)
		if err != nil || !strings.Contains(string(his.Result.Outputs["text"].Value), "BOB'S") {
			t.Fatalf("bob's task %s: %+v %v, want his own result", id, his.Result, err)
		}
	})

	// The agentmesh commands, with a client's credentials, follow what
	// that client owns (its events are on mesh.events.<id>.<kind>.<client>,
	// the only ones it may read): bob's chat turn and his run's watch work;
	// alice's watch of bob's run finds nothing of it.
	t.Run("a client's own chat and run with the commands", func(t *testing.T) {
		cli := func(c *clientConn, args ...string) (string, string, int) {
			return runBinary(t, exec.Command(agentBinary(t), append(args, "--nats", m.url, "--creds", c.creds, "--tls-ca", m.ca)...))
		}
		stdout, stderr, code := cli(m.bob, "chat", "--timeout", "30s", "count the words in hello world")
		if code != 0 || strings.TrimSpace(stdout) == "" {
			t.Fatalf("agentmesh chat as bob: exit %d\n%s\n%s", code, stdout, stderr)
		}
		const run = "bob-watched"
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		spec := client.NewPipeline("watched").SeedValue("note", schemas.TypeText, "", "his").
			Step("shout", "TextAgent").Param("op", "upper").Input("text", "seed.note").MustBuild()
		if _, err := client.SubmitPipeline(ctx, m.bob.js, m.bob.names, spec, run, "bob"); err != nil {
			t.Fatal(err)
		}
		m.waitRunEnd(t, run)
		stdout, stderr, code = cli(m.bob, "watch", run)
		if code != 0 || !strings.Contains(stdout, "shout") {
			t.Fatalf("agentmesh watch %s as bob: exit %d\n%s\n%s", run, code, stdout, stderr)
		}
		stdout, stderr, code = cli(m.alice, "watch", run)
		if code != 1 || strings.Contains(stdout, "shout") || !strings.Contains(stderr, "no run or conversation") {
			t.Fatalf("agentmesh watch %s as alice: exit %d\n%s\n%s; want exit 1, nothing of bob's run", run, code, stdout, stderr)
		}
	})
}

// call is a direct call of TextAgent by c as task id, awaited on c's own
// result subject.
func (c *clientConn) call(t *testing.T, id, text string, delayMS int) schemas.AgentResult {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	replyTo := c.names.ClientResult("TextAgent", c.names.Client(), id)
	if _, err := c.disp.Dispatch(ctx, "TextAgent", upperTask(text, delayMS), client.DispatchMeta{TaskID: id, ReplyTo: replyTo}); err != nil {
		t.Error(err)
		return schemas.AgentResult{}
	}
	res, err := c.disp.Await(ctx, replyTo, id)
	if err != nil {
		t.Errorf("%s's task %s: %v", c.names.Client(), id, err)
	}
	return res.Result
}

// waitStep polls until step of run has status.
func (m *integrityMesh) waitStep(t *testing.T, run, step, status string) {
	t.Helper()
	var err error
	reached := fixture.Within(20*time.Second, func() bool {
		var st *state.RunState
		st, err = m.store.Run(context.Background(), run)
		return err == nil && st.Steps[step] != nil && st.Steps[step].Status == status
	})
	if !reached {
		t.Fatalf("step %s of run %s never %s: %v", step, run, status, err)
	}
}
