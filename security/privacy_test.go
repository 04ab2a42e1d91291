package security_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// narrator reports progress and text as it works, as a model-backed agent
// does: both go where the owner of its task's run (or the client of a
// direct call) reads them.
var narrator = agents.Func(schemas.AgentContract{
	Name: "Narrator", Capability: schemas.CapTransformation, Description: "tells what it does while it upper-cases",
	Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
	Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
	s, _ := ec.Text("text")
	agents.ReportProgress(ctx, "narrating", 50)
	agents.ReportText(ctx, "once upon a time")
	return schemas.AgentResult{Success: true, Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue(strings.ToUpper(s), "Narrator")}}, nil
})

// violation waits for a permissions violation of op ("Publish",
// "Subscription") on a subject starting with prefix.
func (c *conn) violation(t testing.TB, op, prefix string) {
	t.Helper()
	want := op + ` to "` + prefix
	timeout := time.After(5 * time.Second)
	for {
		select {
		case err := <-c.errs:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), want) {
				return
			}
		case <-timeout:
			t.Fatalf("no permissions violation for %s %s...", op, prefix)
		}
	}
}

// A client reads the events and the model's text of what it owns, and
// nothing of another client's: alice follows her chat turn (its progress,
// its streamed text, its answer) and her pipeline run (its steps, its
// agent's progress and text) end to end; mallory, who knows the ids, can
// neither make a consumer on them (nor on all events), nor subscribe to
// them, nor get them one by one, and her own subscriptions see nothing of
// alice's.
func TestPrivacyClientReadsOnlyItsOwn(t *testing.T) {
	m := startSecure(t)
	m.serve(t, narrator)
	answer := "the answer, written piece by piece"
	model, err := llm.New(llmtest.New(t, llmtest.Reply{Content: answer, Chunks: []string{"the answer, ", "written ", "piece by piece"}},
		llmtest.Reply{Content: "admin's answer", Chunks: []string{"admin's ", "answer"}}).Config())
	if err != nil {
		t.Fatal(err)
	}
	oc := m.connect(t, bus.Identity{Role: bus.RoleOrchestrator})
	o, err := orchestrator.New(oc.Conn, orchestrator.WithChat(chat.WithLLM(model)))
	if err != nil {
		t.Fatal(err)
	}
	meshtest.RunOrchestrator(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := o.Registry().Wait(ctx, narrator.Contract().Name, 1); err != nil {
		t.Fatal(err)
	}
	a, own := m.connect(t, alice), m.names.ForClient(alice.Name)
	mal, mine := m.connect(t, mallory), m.names.ForClient(mallory.Name)

	// What mallory may read, all along: her own events and text.
	peek, err := mal.SubscribeSync(mine.AllEvents())
	if err != nil {
		t.Fatal(err)
	}
	peekText, err := mal.SubscribeSync(mine.AllDeltas())
	if err != nil {
		t.Fatal(err)
	}
	if err := mal.Flush(); err != nil {
		t.Fatal(err)
	}

	// Alice's chat turn, followed with her names.
	var progress []string
	var text string
	resp, _, err := client.Turn(ctx, a.js, own, "", "hello", "alice", func(p schemas.TaskProgress) { progress = append(progress, p.Message) }, nil,
		client.WithDeltas(func(d schemas.ChatDelta) { text += d.Text }))
	if err != nil {
		t.Fatal(err)
	}
	conv := resp.ConversationID
	if resp.State != schemas.ChatCompleted || resp.Output != answer {
		t.Fatalf("alice's turn: %+v", resp)
	}
	if text != answer || len(progress) == 0 {
		t.Fatalf("alice's turn streamed %q and progress %q; want the answer %q and a progress note", text, progress, answer)
	}

	// Admin goes on with alice's conversation and follows it with the
	// plain names, which catch owned events and text as well.
	ajs, err := jetstream.New(m.Admin)
	if err != nil {
		t.Fatal(err)
	}
	var adminText string
	resp, _, err = client.Turn(ctx, ajs, m.names, conv, "and you?", "admin", nil, nil, client.WithDeltas(func(d schemas.ChatDelta) { adminText += d.Text }))
	if err != nil || resp.State != schemas.ChatCompleted || resp.Output != "admin's answer" || adminText != "admin's answer" {
		t.Fatalf("admin's turn in alice's conversation: %+v, streamed %q (%v)", resp, adminText, err)
	}

	// Alice's run, with an agent that reports progress and text.
	deltas := make(chan schemas.ChatDelta, 4)
	const run = "alice-private-run"
	stopText, err := client.FollowDeltas(a.Conn, own, run, func(d schemas.ChatDelta) { deltas <- d })
	if err != nil {
		t.Fatal(err)
	}
	defer stopText()
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	spec := client.NewPipeline("private").SeedValue("note", schemas.TypeText, "", "mine").
		Step("tell", narrator.Contract().Name).Input("text", "seed.note").MustBuild()
	if _, err := client.SubmitPipeline(ctx, a.js, own, spec, run, "alice"); err != nil {
		t.Fatal(err)
	}
	told := slices.Contains(followRunProgress(ctx, t, a, own, run), "narrating")
	if !told {
		t.Error("alice did not read the Narrator's progress of her run")
	}
	select {
	case d := <-deltas:
		if d.Text != "once upon a time" || d.RunID != run {
			t.Errorf("the Narrator's text of alice's run: %+v", d)
		}
	case <-ctx.Done():
		t.Fatal("alice did not read the Narrator's text of her run")
	}

	// Mallory, knowing both ids.
	streams := []string{own.Events(conv, "chat"), own.Events(run, "pipeline"), own.Events(run, "task")}
	t.Run("consumers", func(t *testing.T) {
		for _, filter := range []string{m.names.EventsOf(conv), m.names.EventsOf(run), own.EventsOf(conv), own.AllEvents(), m.names.AllEvents(), own.Events(run, "pipeline")} {
			short, scancel := context.WithTimeout(ctx, time.Second)
			_, err := mal.js.OrderedConsumer(short, m.names.EventsStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
			scancel()
			if err == nil {
				t.Fatalf("mallory made a consumer of %s filtered on %s", m.names.EventsStream(), filter)
			}
			mal.violation(t, "Publish", "$JS.API.CONSUMER.CREATE."+m.names.EventsStream()+".")
		}
		// Several filters make a consumer with the filterless subject;
		// a durable is named by its maker.
		short, scancel := context.WithTimeout(ctx, time.Second)
		_, err := mal.js.OrderedConsumer(short, m.names.EventsStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{mine.AllEvents(), own.Events(conv, "chat")}})
		scancel()
		if err == nil {
			t.Fatal("mallory made a consumer with two filters, one alice's")
		}
		mal.violation(t, "Publish", "$JS.API.CONSUMER.CREATE."+m.names.EventsStream()+".")
		short, scancel = context.WithTimeout(ctx, time.Second)
		_, err = mal.js.CreateConsumer(short, m.names.EventsStream(), jetstream.ConsumerConfig{Durable: "peek", FilterSubject: own.Events(conv, "chat")})
		scancel()
		if err == nil {
			t.Fatal("mallory made a durable consumer on alice's conversation")
		}
		mal.violation(t, "Publish", "$JS.API.CONSUMER.CREATE."+m.names.EventsStream()+".peek")
	})
	t.Run("subscriptions", func(t *testing.T) {
		for _, subject := range append(streams, m.names.EventsOf(conv), m.names.AllEvents(), own.AllEvents(), own.Deltas(conv), own.Deltas(run), own.AllDeltas(), m.names.AllDeltas()) {
			if _, err := mal.SubscribeSync(subject); err != nil {
				t.Fatal(err)
			}
			mal.denied(t, "Subscription", subject)
		}
	})
	t.Run("direct gets", func(t *testing.T) {
		s, err := mal.js.Stream(ctx, m.names.EventsStream()) // stream metadata is everyone's
		if err != nil {
			t.Fatal(err)
		}
		for _, subject := range streams {
			short, scancel := context.WithTimeout(ctx, time.Second)
			_, err := s.GetLastMsgForSubject(short, subject)
			scancel()
			if err == nil {
				t.Fatalf("mallory got the last message on %s", subject)
			}
			mal.violation(t, "Publish", "$JS.API.")
		}
		short, scancel := context.WithTimeout(ctx, time.Second)
		_, err = s.GetMsg(short, 1)
		scancel()
		if err == nil {
			t.Fatal("mallory got the first message of the events stream")
		}
		mal.violation(t, "Publish", "$JS.API.")
	})
	// Her own subscriptions saw nothing of alice's.
	if err := mal.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []*nats.Subscription{peek, peekText} {
		if msg, err := sub.NextMsg(0); err == nil {
			t.Errorf("mallory read %s on her own subscription %s", msg.Subject, sub.Subject)
		}
	}
}

// A client's direct call is its own: the agent's progress and text go on
// the client's subjects; a task naming another client as its owner is
// refused (forbidden), so no client can send its progress where another
// reads.
func TestPrivacyDirectCallOwner(t *testing.T) {
	m := startSecure(t)
	m.serve(t, narrator)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, own := m.connect(t, alice), m.names.ForClient(alice.Name)
	const id = "t-alice-direct"
	progress, err := a.SubscribeSync(own.Events(id, "task"))
	if err != nil {
		t.Fatal(err)
	}
	text, err := a.SubscribeSync(own.Deltas(id))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	d := client.NewDispatcher(a.js, own, "alice")
	meta := client.DispatchMeta{TaskID: id, ReplyTo: m.names.ClientResult("Narrator", alice.Name, id)}
	if _, err := d.Dispatch(ctx, "Narrator", upper("mine"), meta); err != nil {
		t.Fatal(err)
	}
	if res, err := d.Await(ctx, meta.ReplyTo, id); err != nil || !res.Result.Success {
		t.Fatalf("alice's direct call: %+v %v", res.Result, err)
	}
	for _, sub := range []*nats.Subscription{progress, text} {
		if _, err := sub.NextMsgWithContext(ctx); err != nil {
			t.Fatalf("alice read nothing on %s: %v", sub.Subject, err)
		}
	}

	// Mallory names alice as the owner of her task.
	mal := m.connect(t, mallory)
	md := client.NewDispatcher(mal.js, m.names.ForClient(mallory.Name), "mallory")
	mmeta := client.DispatchMeta{TaskID: "t-mallory-as-alice", ReplyTo: m.names.ClientResult("Narrator", mallory.Name, "t-mallory-as-alice"), Owner: alice.Name}
	if _, err := md.Dispatch(ctx, "Narrator", upper("spam"), mmeta); err != nil {
		t.Fatal(err)
	}
	res, err := md.Await(ctx, mmeta.ReplyTo, mmeta.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Result.Error; res.Result.Success || e == nil || e.Code != schemas.CodeForbidden || !strings.Contains(e.Message, `owner "alice"`) {
		t.Fatalf("mallory's task owned by alice: %+v %+v; want it refused forbidden, naming the owner", res.Result, e)
	}
}

// followRunProgress follows alice's run where she reads it (own, her
// names) until it completes, and returns the messages of its tasks'
// progress; a run that fails or does not end fails the test.
func followRunProgress(ctx context.Context, t *testing.T, a *conn, own bus.Names, run string) []string {
	t.Helper()
	events, stop, err := client.Follow(ctx, a.js, own, own.EventsOf(run), false)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var progress []string
	for {
		select {
		case ev := <-events:
			var p schemas.TaskProgress
			switch {
			case ev.Type == bus.TypeTaskProgress && ev.DataAs(&p) == nil:
				progress = append(progress, p.Message)
			case ev.Type == bus.TypePipelineCompleted:
				var re schemas.RunEvent
				if err := ev.DataAs(&re); err != nil || re.Status != schemas.RunCompleted {
					t.Fatalf("alice's run ended %+v (%v)", re, err)
				}
				return progress
			}
		case <-ctx.Done():
			t.Fatal("alice's run did not end where she follows it")
		}
	}
}
