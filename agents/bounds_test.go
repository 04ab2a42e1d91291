package agents_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/agents/builtin/analysis"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// missingIDs is the error text of an agent told of n file ids that do not
// exist, one line each, as AnalysisAgent writes it: over 1 MiB at 20,000.
func missingIDs(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "file f-%040d: not found in the object store; check the id\n", i)
	}
	return b.String()
}

// noMoreResults fails when sub gets a second result within a moment.
func noMoreResults(t *testing.T, m *mesh, subject string) {
	t.Helper()
	time.Sleep(300 * time.Millisecond) // a wait for no second result: nothing to poll for
	si, err := m.res.Results.Info(context.Background(), jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	if n := si.State.Subjects[subject]; n != 1 {
		t.Errorf("%d results on %s, want exactly 1", n, subject)
	}
}

// TestResultTooLargeToPublishIsCut: a failure whose message is over the
// server's max payload (20,000 missing ids) used to fail to publish on
// every delivery, leaving the task unanswered; it is answered once, with
// its code, its message cut and saying how much was left out. A success
// too large (an output of 2 MiB) is answered once with too_large naming
// the output.
func TestResultTooLargeToPublishIsCut(t *testing.T) {
	m := newMesh(t)
	long := missingIDs(20_000)
	if len(long) <= 1<<20 {
		t.Fatalf("the message is %d bytes, want over 1 MiB", len(long))
	}
	m.serve(t, agents.Func(schemas.AgentContract{Name: "Lost", Capability: schemas.CapAnalysis, Description: "finds none of its files",
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}},
		func(_ context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			if ec.Params()["big"] == true {
				return schemas.AgentResult{Success: true, Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue(strings.Repeat("y", 2<<20), "Lost")}}, nil
			}
			return schemas.Failure("Lost", schemas.CodeNotFound, long, false), nil
		}))

	ev := task(t, schemas.TaskRequest{})
	got := m.call(t, "Lost", ev)
	e := got.Result.Error
	if got.Result.Success || e == nil || e.Code != schemas.CodeNotFound {
		t.Fatalf("result %+v, want failed not_found", got.Result)
	}
	if !strings.HasPrefix(e.Message, "file f-") || !strings.Contains(e.Message, "more bytes left out") || len(e.Message) > 64<<10 {
		t.Errorf("message of %d bytes: %s", len(e.Message), schemas.Clip(e.Message, 300))
	}
	noMoreResults(t, m, m.n.Result("Lost", ev.ID))

	// A direct call gets the same answer as its reply.
	direct := decodeResult(t, m.callDirect(t, "Lost", task(t, schemas.TaskRequest{})))
	if e := direct.Result.Error; e == nil || e.Code != schemas.CodeNotFound || !strings.Contains(e.Message, "more bytes left out") {
		t.Fatalf("direct call: %+v", direct.Result)
	}

	ev = task(t, schemas.TaskRequest{Params: map[string]any{"big": true}})
	got = m.call(t, "Lost", ev)
	if e := got.Result.Error; got.Result.Success || e == nil || e.Code != schemas.CodeTooLarge || !strings.Contains(e.Message, "text (TEXT,") {
		t.Fatalf("result %+v %+v, want failed too_large naming the output", got.Result, got.Result.Error)
	}
	noMoreResults(t, m, m.n.Result("Lost", ev.ID))
}

// TestSpilledCollectionOverLimitIsRefused: an input that is a spilled
// collection of more ids than the agent resolves fails with
// limit_exceeded naming both counts, before the collection is read.
func TestSpilledCollectionOverLimitIsRefused(t *testing.T) {
	m := newMesh(t)
	coll := resolvers.NewCollections(m.res.Files, 100) // spills anything over 100 bytes
	ids := make([]string, 1001)
	for i := range ids {
		ids[i] = fmt.Sprintf("f-%020d", i)
	}
	fc, err := coll.Spill(context.Background(), schemas.FromIDs(schemas.ContentDocuments, ids...))
	if err != nil || !fc.Spilled() {
		t.Fatalf("spill: %v", err)
	}
	ran := make(chan struct{}, 1)
	m.serve(t, agents.Func(schemas.AgentContract{Name: "Reader", Capability: schemas.CapAnalysis, Description: "reads documents",
		Inputs: []schemas.TypedInput{{Name: "docs", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentDocuments, Required: true}}},
		func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
			ran <- struct{}{}
			return schemas.AgentResult{Success: true}, nil
		}), agents.WithValueResolver(coll), agents.WithMaxCollection(1000))
	got := m.call(t, "Reader", task(t, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"docs": schemas.FilesValue(fc, "test")}}))
	e := got.Result.Error
	if got.Result.Success || e == nil || e.Code != schemas.CodeLimitExceeded || !strings.Contains(e.Message, "1001 is over the limit of 1000") {
		t.Fatalf("result %+v %+v, want limit_exceeded naming 1001 and 1000", got.Result, e)
	}
	select {
	case <-ran:
		t.Error("the agent ran")
	default:
	}
}

// TestResultThatCannotBePublishedIsGivenUp: a result the results stream
// refuses on every delivery (an operator's max message size) is, on the
// last delivery, dead-lettered with the reason and answered with a short
// retries_exhausted result, and the task leaves the queue; it used to
// stay there unanswered.
func TestResultThatCannotBePublishedIsGivenUp(t *testing.T) {
	m := newMesh(t)
	ctx := context.Background()
	cfg := m.res.Results.CachedInfo().Config
	cfg.MaxMsgSize = 2000
	if _, err := m.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	m.serve(t, agents.Func(schemas.AgentContract{Name: "Wordy", Capability: schemas.CapAnalysis, Description: "says a lot"},
		func(context.Context, *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.AgentResult{Success: true, Summary: strings.Repeat("w", 4000)}, nil
		}), agents.WithMaxDeliver(2), agents.WithBackoff(10*time.Millisecond))
	ev := task(t, schemas.TaskRequest{})
	m.publish(t, "Wordy", ev)
	dead, _ := m.n.Dead("Wordy")
	var msg *jetstream.RawStreamMsg
	fixture.Eventually(t, "the dead letter", func() bool {
		msg, _ = m.res.Dead.GetLastMsgForSubject(ctx, dead)
		return msg != nil
	})
	if reason := msg.Header.Get(bus.HeaderDeadReason); !strings.Contains(reason, "gave up after 2 deliveries") {
		t.Fatalf("dead letter reason %q", reason)
	}
	pollTasksEmpty(t, m)
	// The results stream (what the orchestrator reads) holds one result:
	// the short retries_exhausted one.
	subject := m.n.Result("Wordy", ev.ID)
	noMoreResults(t, m, subject)
	rm, err := m.res.Results.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeResult(t, &nats.Msg{Subject: rm.Subject, Header: rm.Header, Data: rm.Data})
	if e := got.Result.Error; got.Result.Success || e == nil || e.Code != schemas.CodeExhausted || !strings.Contains(e.Message, "publishing the result failed") {
		t.Fatalf("result %+v %+v, want retries_exhausted", got.Result, e)
	}
}

func pollTasksEmpty(t *testing.T, m *mesh) {
	t.Helper()
	fixture.Eventually(t, "MESH_TASKS empty", func() bool {
		si, err := m.res.Tasks.Info(context.Background())
		return err == nil && si.State.Msgs == 0
	})
}

// TestAnalysisAgentOf20000MissingIDsIsAnswered: the real AnalysisAgent
// given 20,000 file ids that do not exist writes a failure naming each,
// over 1 MiB: it used to fail to publish on every delivery and leave the
// task unanswered, without retries_exhausted. It gets one answer, with the
// agent's code and the message cut.
func TestAnalysisAgentOf20000MissingIDsIsAnswered(t *testing.T) {
	m := newMesh(t)
	a, err := analysis.New(resolvers.NewObjectStore(m.res.Files))
	if err != nil {
		t.Fatal(err)
	}
	m.serve(t, a, agents.WithConcurrency(1))
	ids := make([]string, 20_000)
	for i := range ids {
		ids[i] = fmt.Sprintf("f-%032x", i)
	}
	ev := task(t, schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{
		"images": schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, ids...), "test")}})
	sub, err := m.nc.SubscribeSync(m.n.Result(analysis.Name, ev.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	m.publish(t, analysis.Name, ev)
	msg, err := sub.NextMsg(60 * time.Second)
	if err != nil {
		t.Fatalf("no result: %v", err)
	}
	got := decodeResult(t, msg)
	e := got.Result.Error
	if got.Result.Success || e == nil || e.Code == schemas.CodeExhausted || !strings.Contains(e.Message+got.Result.Summary, "more bytes left out") {
		t.Fatalf("result %+v %+v, want the agent's failure, cut", schemas.Clip(got.Result.Summary, 300), e)
	}
	if len(msg.Data) > 64<<10 {
		t.Errorf("result of %d bytes", len(msg.Data))
	}
	noMoreResults(t, m, m.n.Result(analysis.Name, ev.ID))
}
