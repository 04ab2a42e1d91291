package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// replica starts a provisioned embedded server and a scheduler on it, as
// an orchestrator replica wires it, that is not running (the tests drive it
// by hand).
func replica(t *testing.T, opts ...Option) (*bustest.Server, *Scheduler) {
	t.Helper()
	srv := bustest.Start(t)
	res := srv.Provision(t)
	nc := srv.Conn(t)
	kvjs, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	store := state.New(res.Conversations, res.Runs, state.WithPipelining(kvjs))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg, err := meshcore.NewRegistry(ctx, res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	lookup := func(agent string) (schemas.AgentContract, bool) {
		info, ok := reg.Lookup(agent)
		return info.Contract, ok
	}
	o, err := New(nc, append([]Option{WithNames(srv.Names()), WithStore(store), WithLookup(lookup)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return srv, o
}

// captureLogs is a configuration logging to what logged returns.
func captureLogs() (opt Option, logged func() string) {
	var (
		mu  sync.Mutex
		buf strings.Builder
	)
	return WithLogger(slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))), func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

// startRun stores a two-step run a -> b on agent X with its first wave in
// progress, as submit would, without dispatching anything.
func startRun(t *testing.T, o *Scheduler, id string) *state.RunSpec {
	return startRunTimeout(t, o, id, 0)
}

// startRunTimeout is startRun with a timeout for a (0: the default).
func startRunTimeout(t *testing.T, o *Scheduler, id string, timeout time.Duration) *state.RunSpec {
	t.Helper()
	contract := schemas.AgentContract{Name: "X", Capability: schemas.CapTransformation, Description: "x"}
	return startRunOf(t, o, id, contract, pipelinespec.PipelineStep{ID: "a", Agent: "X", TimeoutMS: timeout.Milliseconds()},
		pipelinespec.PipelineStep{ID: "b", Agent: "X", DependsOn: []string{"a"}})
}

// startRunOf stores a chain of steps (each after the one before) on the
// agent of contract with its first wave in progress, as submit would,
// without dispatching anything.
func startRunOf(t *testing.T, o *Scheduler, id string, contract schemas.AgentContract, steps ...pipelinespec.PipelineStep) *state.RunSpec {
	t.Helper()
	spec := pipelinespec.PipelineSpec{Name: "race", Steps: steps}
	var waves [][]string
	for _, s := range steps {
		waves = append(waves, []string{s.ID})
	}
	now := time.Now().UTC()
	sd := (&state.RunSpec{ID: id, Spec: spec, Contracts: map[string]schemas.AgentContract{contract.Name: contract},
		Waves: waves, CreatedAt: now}).Init()
	var ch runChanges
	h := newHeader(sd, spec.Name, nil, now, &ch)
	rev, err := o.store.CreateRun(context.Background(), sd, h, schemas.NewConversationState(id))
	if err != nil {
		t.Fatal(err)
	}
	o.cache.putSpec(sd)
	o.cache.putHeader(h, rev)
	return sd
}

// A result whose step record another writer (the sweep's timeout, another
// replica) created first, while the header did not know yet: the record
// and the header are written in one round trip, so the header update goes
// through, and must end up saying what the stored record says.
func TestPipelinedSettleDefersToStoredRecord(t *testing.T) {
	_, o := replica(t)
	ctx := context.Background()

	t.Run("different outcome", func(t *testing.T) {
		sd := startRun(t, o, "race1")
		h, _ := o.cache.header("race1")
		timedOut := failedRecord(sd, h, "a", schemas.CodeTimeout, "TIMEOUT: no result by the deadline", time.Now().UTC())
		if _, err := o.store.RecordStep(ctx, "race1", timedOut); err != nil {
			t.Fatal(err)
		}
		if err := o.ApplyResult(ctx, "race1", "a", pipelinespec.StepTaskID("race1", "a", 1, ""),
			schemas.AgentResult{Success: true, Agent: "X", Summary: "late"}); err != nil {
			t.Fatal(err)
		}
		run, err := o.store.Run(ctx, "race1")
		if err != nil {
			t.Fatal(err)
		}
		a, b := run.Steps["a"], run.Steps["b"]
		if run.Status != schemas.RunFailed || a.Status != schemas.StepFailed || !strings.Contains(a.Error, "TIMEOUT") {
			t.Fatalf("run %s, a %+v: want the stored timeout to count", run.Status, a)
		}
		if b.Status != schemas.StepSkipped || !strings.Contains(b.Reason, `dependency "a" failed`) {
			t.Errorf("b %+v: want skipped because a failed", b)
		}
		hd, _, err := o.store.Header(ctx, "race1")
		if err != nil {
			t.Fatal(err)
		}
		if hd.FailedSteps != 1 || hd.SkippedSteps != 1 || len(hd.Failures) != 2 || !strings.Contains(hd.Failures[0], "TIMEOUT") {
			t.Errorf("header %+v: want a counted as failed (with the stored timeout) and b as skipped", hd)
		}
	})

	t.Run("same outcome", func(t *testing.T) {
		sd := startRun(t, o, "race2")
		h, _ := o.cache.header("race2")
		res := schemas.AgentResult{Success: true, Agent: "X", Summary: "done"}
		first := resultRecord(sd, h, "a", pipelinespec.StepTaskID("race2", "a", 1, ""), res, time.Now().UTC())
		if _, err := o.store.RecordStep(ctx, "race2", first); err != nil {
			t.Fatal(err)
		}
		if err := o.ApplyResult(ctx, "race2", "a", pipelinespec.StepTaskID("race2", "a", 1, ""), res); err != nil {
			t.Fatal(err)
		}
		hd, hrev, err := o.store.Header(ctx, "race2")
		if err != nil {
			t.Fatal(err)
		}
		if hd.Wave != 1 || hd.FailedSteps != 0 || hd.Completed != 1 || hd.Ends != 0 {
			t.Errorf("header %+v: want a completed once and wave 1 started", hd)
		}
		// The duplicate changes nothing.
		if err := o.ApplyResult(ctx, "race2", "a", pipelinespec.StepTaskID("race2", "a", 1, ""), res); err != nil {
			t.Fatal(err)
		}
		again, arev, err := o.store.Header(ctx, "race2")
		if err != nil {
			t.Fatal(err)
		}
		if arev != hrev || again.Wave != 1 {
			t.Errorf("after a duplicate: %+v", again)
		}
	})
}

// taskSpy counts every publish on the tasks subject of agent X, duplicates
// that the stream drops included.
func taskSpy(t *testing.T, srv *bustest.Server) func() []string {
	t.Helper()
	subject, _ := srv.Names().Task("X")
	var (
		mu  sync.Mutex
		ids []string
	)
	nc := srv.Conn(t)
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
		mu.Lock()
		ids = append(ids, m.Header.Get(jetstream.MsgIDHeader))
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		_ = nc.Flush()
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ids)
	}
}

func TestDispatchAhead(t *testing.T) {
	srv, o := replica(t, WithGrace(time.Second))
	ctx := context.Background()
	published := taskSpy(t, srv)
	res := schemas.AgentResult{Success: true, Agent: "X", Summary: "done"}

	// The result of a, well before its deadline, publishes b's task once:
	// ahead of the header, and not again after it.
	sd := startRun(t, o, "ahead1")
	if err := o.ApplyResult(ctx, "ahead1", "a", pipelinespec.StepTaskID("ahead1", "a", 1, ""), res); err != nil {
		t.Fatal(err)
	}
	want := []string{pipelinespec.StepTaskID("ahead1", "b", 1, "")}
	fixture.Within(5*time.Second, func() bool { return len(published()) > 0 })

	// When the header would not be written the way the tasks were, nothing
	// goes out ahead of it.
	h, _ := o.cache.header(sd.ID)
	now := time.Now().UTC()
	for _, c := range []struct {
		name string
		rec  *state.StepState
	}{
		{"within the grace of its deadline", &state.StepState{ID: "a", Status: schemas.StepCompleted, DispatchedAt: now.Add(-time.Second), Deadline: now.Add(500 * time.Millisecond)}},
		{"past its deadline", &state.StepState{ID: "a", Status: schemas.StepCompleted, DispatchedAt: now.Add(-time.Minute), Deadline: now.Add(-time.Second)}},
		{"a wave started long ago", &state.StepState{ID: "a", Status: schemas.StepCompleted, DispatchedAt: now.Add(-2 * republishWithin), Deadline: now.Add(time.Hour)}},
	} {
		ch := runChanges{dispatch: []string{"b"}}
		o.dispatchAhead(ctx, sd, h, &ch, []*state.StepState{c.rec}, now, true)()
		if o.cache.takeAhead(sd.ID, "b") {
			t.Errorf("%s: b published ahead of the header", c.name)
		}
	}
	time.Sleep(200 * time.Millisecond) // for a second publish to show
	if got := published(); !slices.Equal(got, want) {
		t.Errorf("tasks published %v, want %v once", got, want)
	}
}

// The result of a task published ahead of its header, arriving before that
// header: it is not taken for a late result (dropped), but handed back
// (ErrEarly) until the header starts its wave.
func TestEarlyResultWaitsForItsWave(t *testing.T) {
	_, o := replica(t)
	ctx := context.Background()
	startRun(t, o, "early1")
	res := schemas.AgentResult{Success: true, Agent: "X", Summary: "b first"}
	err := o.ApplyResult(ctx, "early1", "b", pipelinespec.StepTaskID("early1", "b", 1, ""), res)
	if !errors.Is(err, ErrEarly) || !strings.Contains(err.Error(), `step "b"`) {
		t.Fatalf("b's result before a's: %v, want ErrEarly naming b", err)
	}
	if err := o.ApplyResult(ctx, "early1", "a", pipelinespec.StepTaskID("early1", "a", 1, ""), res); err != nil {
		t.Fatal(err)
	}
	if err := o.ApplyResult(ctx, "early1", "b", pipelinespec.StepTaskID("early1", "b", 1, ""), res); err != nil {
		t.Fatalf("b's result once a's is in: %v", err)
	}
	run, err := o.store.Run(ctx, "early1")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != schemas.RunCompleted || run.Steps["b"].Summary != "b first" {
		t.Errorf("run %s, b %+v: want completed with b's early result", run.Status, run.Steps["b"])
	}
}

// A result that comes in within the sweep's grace of its step's deadline
// may lose to the sweep's timeout: its record is written on its own first,
// so the header never says anything the stored record does not, and no
// task goes out for a step that is to be skipped.
func TestResultNearItsDeadlineIsWrittenRecordFirst(t *testing.T) {
	logger, logged := captureLogs()
	srv, o := replica(t, WithGrace(time.Second), logger)
	ctx := context.Background()
	published := taskSpy(t, srv)
	sd := startRunTimeout(t, o, "near1", 500*time.Millisecond)
	h, _ := o.cache.header("near1")
	timedOut := failedRecord(sd, h, "a", schemas.CodeTimeout, "TIMEOUT: no result by the deadline", time.Now().UTC())
	if _, err := o.store.RecordStep(ctx, "near1", timedOut); err != nil {
		t.Fatal(err)
	}
	_, rev, err := o.store.Header(ctx, "near1")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.ApplyResult(ctx, "near1", "a", pipelinespec.StepTaskID("near1", "a", 1, ""),
		schemas.AgentResult{Success: true, Agent: "X", Summary: "just in time"}); err != nil {
		t.Fatal(err)
	}
	hd, _, err := o.store.Header(ctx, "near1")
	if err != nil {
		t.Fatal(err)
	}
	if hd.FailedSteps != 1 || hd.Status != schemas.RunFailed || hd.SkippedSteps != 1 || !strings.Contains(hd.Error, "TIMEOUT") {
		t.Errorf("header %+v: want a failed by the stored timeout and b skipped", hd)
	}
	// One header write, the one that settles the stored record: none that
	// first said a completed and was then repaired.
	hist, err := o.store.RunsBucket().History(ctx, "near1")
	if err != nil {
		t.Fatal(err)
	}
	var writes []string
	for _, e := range hist {
		if e.Revision() > rev {
			writes = append(writes, string(e.Value()))
		}
	}
	if len(writes) != 1 {
		t.Errorf("header written %d times after the result: %q", len(writes), writes)
	}
	time.Sleep(200 * time.Millisecond) // nothing may be published: a wait for no event, not a condition
	if got := published(); len(got) != 0 {
		t.Errorf("tasks published %v for a step that is skipped", got)
	}
	if strings.Contains(logged(), "may not match") {
		t.Errorf("the header was repaired: %s", logged())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A wave's tasks go out without waiting for the stream; the sweep publishes
// a task whose result does not come again, once, waiting for the stream's
// answer, and reports a refusal with the stream's reason.
func TestSweepPublishesALostTaskAgain(t *testing.T) {
	logger, logged := captureLogs()
	srv, o := replica(t, logger)
	o.cfg.Republish = time.Nanosecond
	ctx := context.Background()
	js := srv.JetStream(t)
	tasks, err := js.Stream(ctx, srv.Names().TasksStream())
	if err != nil {
		t.Fatal(err)
	}
	subject, _ := srv.Names().Task("X")
	stored := func() (n uint64, id string) {
		info, err := tasks.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			t.Fatal(err)
		}
		if m, err := tasks.GetLastMsgForSubject(ctx, subject); err == nil {
			id = m.Header.Get(jetstream.MsgIDHeader)
		}
		return info.State.Msgs, id
	}

	// The run's first wave started, but its task never reached the stream.
	startRun(t, o, "lost1")
	if n, _ := stored(); n != 0 {
		t.Fatalf("%d tasks stored before the sweep", n)
	}
	o.sweepRun(ctx, "lost1")
	if n, id := stored(); n != 1 || id != pipelinespec.StepTaskID("lost1", "a", 1, "") {
		t.Fatalf("after the sweep: %d tasks stored, last %q; want a's task once", n, id)
	}
	o.sweepRun(ctx, "lost1")
	if n, _ := stored(); n != 1 {
		t.Errorf("after a second sweep: %d tasks stored, want 1 (published again once)", n)
	}

	// A stream that refuses the task (full): the step fails at once with
	// backlog_full and the stream's reason.
	cfg, err := tasks.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	c.MaxMsgs, c.Discard = 1, jetstream.DiscardNew
	if _, err := js.UpdateStream(ctx, c); err != nil {
		t.Fatal(err)
	}
	startRun(t, o, "lost2")
	o.sweepRun(ctx, "lost2")
	run, err := o.store.Run(ctx, "lost2")
	if err != nil {
		t.Fatal(err)
	}
	if a := run.Steps["a"]; a == nil || a.Code != schemas.CodeBacklogFull || !strings.Contains(a.Error, "maximum messages exceeded") {
		t.Errorf("step a of a run whose task the stream refused: %+v, want backlog_full with the stream's reason (log: %s)", a, logged())
	}
}

// A result with outputs to route: its record, the run's state and the
// header are written in turn, and the next wave starts ahead of them when
// its inputs come from the result itself, not when they read the run's
// slots (which the result's outputs are not routed into yet).
func TestRoutedResultStartsTheNextWaveAhead(t *testing.T) {
	srv, o := replica(t)
	ctx := context.Background()
	published := taskSpy(t, srv)
	lastTask := func() (string, schemas.TaskRequest) {
		st, err := srv.JetStream(t).Stream(ctx, srv.Names().TasksStream())
		if err != nil {
			t.Fatal(err)
		}
		m, err := st.GetLastMsgForSubject(ctx, mustTask(t, srv))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := bus.Decode(&nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data})
		if err != nil {
			t.Fatal(err)
		}
		var task schemas.TaskRequest
		if err := ev.DataAs(&task); err != nil {
			t.Fatal(err)
		}
		return ev.ID, task
	}
	x := schemas.AgentContract{Name: "X", Capability: schemas.CapTransformation, Description: "x",
		Inputs:  []schemas.TypedInput{{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages}},
		Outputs: []schemas.TypedOutput{{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages}}}
	res := schemas.AgentResult{Success: true, Agent: "X", Summary: "found 2",
		Outputs: map[string]schemas.TypedValue{"images": schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, "i1", "i2"), "")}}

	for _, c := range []struct {
		name  string
		b     pipelinespec.PipelineStep
		ahead bool
	}{
		{"from its parent", pipelinespec.PipelineStep{ID: "b", Agent: "X", DependsOn: []string{"a"}}, true},
		{"from the run's slots", pipelinespec.PipelineStep{ID: "b", Agent: "X", DependsOn: []string{"a"},
			Inputs: map[string]string{"images": "state." + route.SlotImageIDs}}, false},
	} {
		run := "routed" + strconv.Itoa(len(published()))
		startRunOf(t, o, run, x, pipelinespec.PipelineStep{ID: "a", Agent: "X"}, c.b)
		if err := o.ApplyResult(ctx, run, "a", pipelinespec.StepTaskID(run, "a", 1, ""), res); err != nil {
			t.Fatal(err)
		}
		if got := o.cache.aheadWrite(run) != nil; got != c.ahead {
			t.Errorf("%s: b's task sent ahead of the header: %v, want %v", c.name, got, c.ahead)
		}
		time.Sleep(100 * time.Millisecond) // for a second publish to show
		if n := count(published(), pipelinespec.StepTaskID(run, "b", 1, "")); n != 1 {
			t.Fatalf("%s: b's task published %d times, want once", c.name, n)
		}
		id, task := lastTask()
		if id != pipelinespec.StepTaskID(run, "b", 1, "") {
			t.Fatalf("%s: last task %s", c.name, id)
		}
		fc, err := task.Inputs["images"].Files()
		if err != nil || !slices.Equal(fc.IDs(), []string{"i1", "i2"}) {
			t.Errorf("%s: b's input %+v (%v), want a's two images", c.name, task.Inputs["images"], err)
		}
		run2, err := o.store.Run(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if v := run2.State.Slots[route.SlotImageIDs]; v.DataType != schemas.TypeFileIDs {
			t.Errorf("%s: slot %s after a: %+v", c.name, route.SlotImageIDs, v)
		}
	}
}

func mustTask(t *testing.T, srv *bustest.Server) string {
	t.Helper()
	s, err := srv.Names().Task("X")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func count(ids []string, id string) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

// The outputs of a wave are routed into the run's state once, by the write
// that ends the wave, from the state this replica cached; a state that
// moved on meanwhile (another writer) is read again and routed into,
// losing neither write. The state keeps slots and the count of waves
// routed, nothing that grows with the run.
func TestRoutedResultsWriteRecordAndStateTogether(t *testing.T) {
	_, o := replica(t)
	ctx := context.Background()
	x := schemas.AgentContract{Name: "X", Capability: schemas.CapTransformation, Description: "x",
		Inputs:  []schemas.TypedInput{{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages}},
		Outputs: []schemas.TypedOutput{{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages}}}
	result := func(ids ...string) schemas.AgentResult {
		return schemas.AgentResult{Success: true, Agent: "X", Summary: "found",
			Outputs: map[string]schemas.TypedValue{"images": schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, ids...), "")}}
	}
	stored := func(run string) (*schemas.ConversationState, uint64) {
		e, err := o.store.RunsBucket().Get(ctx, run+".state")
		if err != nil {
			t.Fatal(err)
		}
		st := schemas.NewConversationState(run)
		if err := json.Unmarshal(e.Value(), st); err != nil {
			t.Fatal(err)
		}
		return st, e.Revision()
	}

	for _, stale := range []bool{false, true} {
		run := "together-" + strconv.FormatBool(stale)
		startRunOf(t, o, run, x, pipelinespec.PipelineStep{ID: "a", Agent: "X"}, pipelinespec.PipelineStep{ID: "b", Agent: "X", DependsOn: []string{"a"}},
			pipelinespec.PipelineStep{ID: "c", Agent: "X", DependsOn: []string{"b"}})
		if err := o.ApplyResult(ctx, run, "a", pipelinespec.StepTaskID(run, "a", 1, ""), result("i1")); err != nil {
			t.Fatal(err)
		}
		if _, rev := stored(run); func() uint64 { _, r := o.cache.state(run); return r }() != rev {
			t.Fatalf("after a: the cached state is not the stored one (revision %d)", rev)
		}
		if stale {
			if _, _, err := o.store.UpdateRunState(ctx, run, func(st *schemas.ConversationState) error {
				st.Slots["another"] = schemas.TextValue("another writer", "test")
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		if err := o.ApplyResult(ctx, run, "b", pipelinespec.StepTaskID(run, "b", 1, ""), result("i2")); err != nil {
			t.Fatal(err)
		}
		st, rev := stored(run)
		if _, crev := o.cache.state(run); crev != rev {
			t.Errorf("stale %v: cached state revision %d, stored %d", stale, crev, rev)
		}
		fc, err := st.Slots[route.SlotImageIDs].Files()
		if err != nil || !slices.Equal(fc.IDs(), []string{"i2"}) {
			t.Errorf("stale %v: slot %s %v (%v), want b's i2", stale, route.SlotImageIDs, st.Slots[route.SlotImageIDs], err)
		}
		if _, kept := st.Slots["another"]; kept != stale {
			t.Errorf("stale %v: the other writer's slot kept: %v", stale, kept)
		}
		if st.RoutedWaves != 2 || len(st.History) != 0 || len(st.AppliedTasks) != 0 {
			t.Errorf("stale %v: %d waves routed (want 2), %d history entries, %d applied task ids (want none)", stale, st.RoutedWaves, len(st.History), len(st.AppliedTasks))
		}
		run2, err := o.store.Run(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if run2.Status != schemas.RunRunning || run2.Wave != 2 || run2.Steps["b"].Status != schemas.StepCompleted {
			t.Errorf("stale %v: run %s in wave %d, b %+v", stale, run2.Status, run2.Wave, run2.Steps["b"])
		}
	}
}

// New without a store or a contract lookup is an error naming each missing
// option, not a scheduler that fails later.
func TestNewNamesWhatIsMissing(t *testing.T) {
	srv := bustest.Start(t)
	_, err := New(srv.Conn(t))
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("New without options: %v, want ErrConfig", err)
	}
	for _, want := range []string{"WithStore", "WithLookup"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
