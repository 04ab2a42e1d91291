package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/schemas"
)

// partitionFor is how long the partition test keeps a node cut off.
const partitionFor = 20 * time.Second

var orchestratorReady = regexp.MustCompile(`^orchestrator ready`)

// A three-node cluster of `agentmesh server` processes, each in a network
// namespace of its own, runs a steady load of pipelines and chat turns
// while one node (holding an orchestrator replica, agents, and by then the
// leader of every stream and consumer) is cut off the network for 20 s and
// then put back. Every request the cluster accepted ends exactly once and
// completes: one pipeline.completed per run, one chat.responded per turn,
// none for anything else. The test reports how long the majority took to
// serve again, how long after the heal the last answer came, and when the
// cut node was a current replica of every stream again.
//
// It needs root and `ip` (it makes network namespaces; newNetLab skips it
// elsewhere, saying why) and takes about a minute and a half; -short skips
// it. The recovery figures go to partition-report.txt in
// $AGENTMESH_ARTIFACTS when that is set (.ci/run prints them).
func TestClusterPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: the partition test takes about a minute and a half")
	}
	lab := newNetLab(t, 3)
	bin := agentBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The cluster: n1, n2, n3, each in its namespace on its own address.
	var routes, urls []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats://%s:6222", lab.nodeIP(i)))
	}
	for i := range 3 {
		p := proctest.Start(t, lab.command(i, bin, "server", "--name", fmt.Sprintf("n%d", i+1), "--host", lab.nodeIP(i), "--port", "4222",
			"--store", filepath.Join(t.TempDir(), "store"), "--cluster-name", "mesh",
			"--cluster-listen", lab.nodeIP(i)+":6222", "--routes", strings.Join(routes, ",")), serverListening)
		urls = append(urls, p.WaitReady(t)[1])
	}
	// The test's own connection comes from the hub and stays with the
	// majority (n1 and n2): what it submits is what the cluster accepts.
	nc, err := nats.Connect(urls[0]+","+urls[1], nats.SetCustomDialer(lab.dialer()), nats.IgnoreDiscoveredServers(),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	bustest.WaitJetStream(t, ctx.Done(), js)
	if out, err := lab.command(0, bin, "--nats", urls[0], "--js-replicas", "3", "agents").CombinedOutput(); err != nil {
		t.Fatalf("provisioning with three replicas: %v\n%s", err, out)
	}

	// Orchestrator replicas on n1 and n3; agents on n2 and n3. Each process
	// talks to its own node only. No LLM: the offline planner answers chat.
	env := append(os.Environ(), "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	orchestrators := map[string]*proctest.Proc{}
	for _, i := range []int{0, 2} {
		cmd := lab.command(i, bin, "--nats", urls[i], "orchestrator")
		cmd.Env = append(env, "AGENTMESH_LOG_LEVEL=debug") // the dispatcher's "task already stored"
		p := proctest.Start(t, cmd, orchestratorReady)
		p.WaitReady(t)
		orchestrators[fmt.Sprintf("orchestrator on n%d", i+1)] = p
	}
	// Each task a replica published again that the stream held already,
	// and under which sequence (client.Dispatcher, at debug level), shown
	// whether the test passes or fails.
	defer func() {
		for name, p := range orchestrators {
			lines, stored := 0, 0
			for line := range strings.Lines(p.Stderr.String()) {
				lines++
				if strings.Contains(line, "result found stored") {
					t.Logf("%s: %s", name, strings.TrimSpace(line))
				}
				if strings.Contains(line, "task already stored") {
					stored++
					t.Logf("%s: %s", name, strings.TrimSpace(line))
				}
			}
			t.Logf("%s: %d lines logged, %d of a task published again that the stream held already", name, lines, stored)
		}
	}()
	for _, i := range []int{1, 2} {
		for _, agent := range []string{"TextAgent", "ImageSearchAgent"} {
			proctest.Start(t, lab.command(i, bin, "agent", agent, "--nats", urls[i]), agentReady).WaitReady(t)
		}
	}
	reg, err := client.NewRegistry(ctx, mustKV(t, ctx, js, "mesh_agents"))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	for _, agent := range []string{"TextAgent", "ImageSearchAgent"} {
		if err := reg.Wait(ctx, agent, 2); err != nil {
			t.Fatal(err)
		}
	}

	names := bus.MustNames("")
	seen := watchOutcomes(t, ctx, js, names)
	const cutNode = 2
	leadOn(t, ctx, js, fmt.Sprintf("n%d", cutNode+1))

	// The load: a two-step pipeline every 200 ms and a chat turn every
	// 500 ms, from 3 s before the cut until 3 s after the heal.
	load := startLoad(ctx, js, names)
	time.Sleep(3 * time.Second)
	cutAt := time.Now()
	lab.cut(cutNode)
	time.Sleep(partitionFor)
	lab.heal(cutNode)
	healAt := time.Now()
	type caught struct {
		at  time.Time
		why string
	}
	caughtUp := make(chan caught, 1)
	go func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		at, why := waitCurrent(cctx, js, fmt.Sprintf("n%d", cutNode+1))
		caughtUp <- caught{at, why}
	}()
	time.Sleep(3 * time.Second)
	accepted := load.stop()
	if len(accepted.failed) > 0 {
		t.Errorf("the majority refused %d submissions: %v", len(accepted.failed), accepted.failed)
	}
	during := 0
	for _, r := range accepted.reqs {
		if r.at.After(cutAt) && r.at.Before(healAt) {
			during++
		}
	}
	if during == 0 {
		t.Fatalf("nothing was accepted while n%d was cut off", cutNode+1)
	}

	// Every accepted request answered, then the mesh quiet: nothing left
	// to deliver or to acknowledge anywhere, so no answer can follow.
	// A task lost on the way would fail its step after the default task
	// timeout (60 s): 90 s is enough for every request to end somehow.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 90*time.Second)
	defer wcancel()
	last, missing := seen.waitAll(wctx, accepted.reqs)
	if len(missing) > 0 {
		ectx, ecancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer ecancel()
		for _, r := range missing {
			t.Log(explainMissing(ectx, js, names, r))
		}
		t.Fatalf("%d of %d accepted requests never answered", len(missing), len(accepted.reqs))
	}
	waitQuiet(t, wctx, js, names)
	cu := <-caughtUp
	current := cu.at
	if current.IsZero() {
		t.Errorf("n%d was never a current replica of every stream again: %s", cutNode+1, cu.why)
	}

	// Count the answers in the stream itself.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer rcancel()
	got := readOutcomes(t, rctx, js, names)
	want := map[string]bool{}
	for _, r := range accepted.reqs {
		want[r.id] = true
		evs := got[r.id]
		if len(evs) != 1 {
			raw, _ := json.Marshal(evs)
			t.Errorf("%s %s: %d outcomes, want exactly 1: %s", r.kind, r.id, len(evs), raw)
			continue
		}
		if err := completed(evs[0]); err != nil {
			t.Errorf("%s %s: %v", r.kind, r.id, err)
		}
	}
	// Outcomes of no accepted request: at most one for each submission
	// the stop cut short (stored before the stop, or not), of its kind.
	unasked := map[string]int{}
	for id, evs := range got {
		if want[id] {
			continue
		}
		kind := "run"
		if evs[0].Type == bus.TypeChatResponded {
			kind = "chat"
		}
		if unasked[kind]++; unasked[kind] > accepted.cut[kind] || len(evs) != 1 {
			t.Errorf("%d outcomes for %s %s, which nobody submitted (%d %s submissions cut short by the load's stop)", len(evs), kind, id, accepted.cut[kind], kind)
		}
	}

	first := seen.firstFor(accepted.reqs, cutAt)
	runs, chats := accepted.count()
	report := fmt.Sprintf("%d pipelines and %d chat turns accepted, %d while n%d was cut off for %s\n", runs, chats, during, cutNode+1, partitionFor) +
		fmt.Sprintf("recovery: the majority answered a request sent after the cut %s after the cut; the last answer came %s after the heal; n%d was a current replica of every stream %s after the heal; slowest request %s\n",
			first.Sub(cutAt).Round(100*time.Millisecond), max(0, last.Sub(healAt)).Round(100*time.Millisecond), cutNode+1,
			current.Sub(healAt).Round(100*time.Millisecond), seen.slowest(accepted.reqs).Round(100*time.Millisecond))
	t.Log(report)
	if dir := os.Getenv("AGENTMESH_ARTIFACTS"); dir != "" && !t.Failed() {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "partition-report.txt"), []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// request is one accepted submission.
type request struct {
	kind, id string // kind "run" or "chat"
	at       time.Time
}

// loadGen submits pipelines and chat turns until stopped.
type loadGen struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	reqs   []request
	failed []string
	cut    map[string]int // by kind: submissions the stop cut short
}

func startLoad(ctx context.Context, js jetstream.JetStream, names bus.Names) *loadGen {
	ctx, cancel := context.WithCancel(ctx)
	g := &loadGen{cancel: cancel, cut: map[string]int{}}
	spec := client.NewPipeline("partition").
		Step("upper", "TextAgent").Param("op", "upper").Input("text", "text:hello partition").
		Then("count", "TextAgent").Param("op", "wordcount").
		MustBuild()
	g.every(ctx, 200*time.Millisecond, "run", func(n int) (string, error) {
		return client.SubmitPipeline(ctx, js, names, spec, fmt.Sprintf("part-run-%d", n), "partition test")
	})
	g.every(ctx, 500*time.Millisecond, "chat", func(int) (string, error) {
		conv, _, err := client.SendChat(ctx, js, names, "", "find sunset images", "partition test")
		return conv, err
	})
	return g
}

// every calls submit every period (or as soon as the last one returned,
// when it took longer) until ctx ends, recording what was accepted.
func (g *loadGen) every(ctx context.Context, period time.Duration, kind string, submit func(n int) (string, error)) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			id, err := submit(n)
			g.mu.Lock()
			switch {
			case err == nil:
				g.reqs = append(g.reqs, request{kind: kind, id: id, at: time.Now()})
			case ctx.Err() == nil:
				g.failed = append(g.failed, fmt.Sprintf("%s %d: %v", kind, n, err))
			default:
				g.cut[kind]++
			}
			g.mu.Unlock()
		}
	}()
}

// accepted is what a load generator submitted.
type accepted struct {
	reqs   []request
	failed []string
	cut    map[string]int // by kind: submissions the stop cut short, which may have been stored
}

func (a accepted) count() (runs, chats int) {
	for _, r := range a.reqs {
		if r.kind == "run" {
			runs++
		} else {
			chats++
		}
	}
	return runs, chats
}

// stop ends the load and returns what was submitted. A submission cut
// short by the stop is neither accepted nor failed: its publish may or
// may not have been stored, and then has an outcome nobody waits for
// (counted in cut).
func (g *loadGen) stop() accepted {
	g.cancel()
	g.wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return accepted{reqs: slices.Clone(g.reqs), failed: slices.Clone(g.failed), cut: maps.Clone(g.cut)}
}

// outcomeFilters are the event subjects of runs and conversations.
func outcomeFilters(names bus.Names) []string {
	return []string{names.Events("*", "pipeline"), names.Events("*", "chat")}
}

// outcomeID is the run or conversation an outcome event answers, or ""
// for any other event.
func outcomeID(ev bus.Event) string {
	switch ev.Type {
	case bus.TypePipelineCompleted:
		return ev.Ext(bus.ExtRunID)
	case bus.TypeChatResponded:
		return ev.Ext(bus.ExtConversationID)
	}
	return ""
}

// completed says why an outcome is not a success, or nil.
func completed(ev bus.Event) error {
	if ev.Type == bus.TypePipelineCompleted {
		var r schemas.RunEvent
		if err := ev.DataAs(&r); err != nil || r.Status != schemas.RunCompleted {
			return fmt.Errorf("run ended %s (%v): %s %s", r.Status, err, r.Code, r.Error)
		}
		return nil
	}
	var r schemas.ChatResponse
	if err := ev.DataAs(&r); err != nil || r.State != schemas.ChatCompleted {
		return fmt.Errorf("chat turn ended %s (%v): %s", r.State, err, r.Error)
	}
	return nil
}

// outcomeWatch records when the first outcome of each run or
// conversation was seen, as it happens.
type outcomeWatch struct {
	mu      sync.Mutex
	at      map[string]time.Time
	changed chan struct{}
}

func watchOutcomes(t *testing.T, ctx context.Context, js jetstream.JetStream, names bus.Names) *outcomeWatch {
	t.Helper()
	w := &outcomeWatch{at: map[string]time.Time{}, changed: make(chan struct{}, 1)}
	cons, err := js.OrderedConsumer(ctx, names.EventsStream(), jetstream.OrderedConsumerConfig{FilterSubjects: outcomeFilters(names)})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		ev, err := bus.DecodeJS(m)
		if err != nil {
			return
		}
		if id := outcomeID(ev); id != "" {
			w.mu.Lock()
			if _, ok := w.at[id]; !ok {
				w.at[id] = time.Now()
			}
			w.mu.Unlock()
			select {
			case w.changed <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return w
}

// waitAll waits until every request has an outcome and returns when the
// last one came, or, when ctx ends first, the requests still unanswered.
func (w *outcomeWatch) waitAll(ctx context.Context, reqs []request) (time.Time, []request) {
	for {
		var missing []request
		var last time.Time
		w.mu.Lock()
		for _, r := range reqs {
			if at, ok := w.at[r.id]; !ok {
				missing = append(missing, r)
			} else if at.After(last) {
				last = at
			}
		}
		w.mu.Unlock()
		if len(missing) == 0 {
			return last, nil
		}
		select {
		case <-w.changed:
		case <-ctx.Done():
			return last, missing
		}
	}
}

// explainMissing says what the mesh holds of an unanswered request: its
// key in KV (the run's header, the conversation's chat record) and every
// event stored under its id.
func explainMissing(ctx context.Context, js jetstream.JetStream, names bus.Names, r request) string {
	bucket, key := names.RunsBucket(), r.id
	if r.kind == "chat" {
		bucket, key = names.ConversationsBucket(), r.id+".chat"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s accepted at %s, never answered:", r.kind, r.id, r.at.Format("15:04:05.000"))
	if kv, err := js.KeyValue(ctx, bucket); err != nil {
		fmt.Fprintf(&b, "\n  bucket %s: %v", bucket, err)
	} else if e, err := kv.Get(ctx, key); err != nil {
		fmt.Fprintf(&b, "\n  key %s: %v", key, err)
	} else {
		fmt.Fprintf(&b, "\n  key %s (revision %d, %s): %s", key, e.Revision(), e.Created().Format("15:04:05.000"), e.Value())
	}
	if r.kind == "run" {
		if kv, err := js.KeyValue(ctx, bucket); err == nil {
			if keys, err := kv.ListKeysFiltered(ctx, r.id+".step.>"); err == nil {
				for k := range keys.Keys() {
					if e, err := kv.Get(ctx, k); err == nil {
						fmt.Fprintf(&b, "\n  key %s (%s): %s", k, e.Created().Format("15:04:05.000"), e.Value())
					}
				}
			}
		}
		dumpStream(ctx, &b, js, names.ResultsStream(), names.OrchestratorResult("*", r.id), "result", "")
	} else {
		// A chat turn's tool calls reply on mesh.result.<agent>.<task>.
		dumpStream(ctx, &b, js, names.ResultsStream(), names.Results(), "result", r.id)
	}
	dumpHeld(ctx, &b, js, names.TasksStream())
	for _, c := range []struct{ stream, name string }{{names.TasksStream(), "TextAgent"}, {names.TasksStream(), "ImageSearchAgent"},
		{names.ResultsStream(), "orchestrator"}, {names.RequestsStream(), "orchestrator"}} {
		if cons, err := js.Consumer(ctx, c.stream, c.name); err == nil {
			if ci, err := cons.Info(ctx); err == nil {
				fmt.Fprintf(&b, "\n  consumer %s of %s: leader %s, delivered %d, ack floor %d, pending %d, unacknowledged %d, redelivered %d, waiting %d",
					c.name, c.stream, ci.Cluster.Leader, ci.Delivered.Stream, ci.AckFloor.Stream, ci.NumPending, ci.NumAckPending, ci.NumRedelivered, ci.NumWaiting)
			}
		}
	}
	dumpStream(ctx, &b, js, names.EventsStream(), names.EventsOf(r.id), "event", "")
	if r.kind == "chat" {
		dumpToolResults(ctx, &b, js, names, r.id)
	}
	dumpStream(ctx, &b, js, names.DeadStream(), names.DeadAll(), "dead letter", "")
	return b.String()
}

// dumpToolResults writes, for each tool call of conversation conv (its
// "calling" progress events), whether MESH_RESULTS holds a result on the
// call's subject: a result stored that the turn's wait missed, or none.
func dumpToolResults(ctx context.Context, b *strings.Builder, js jetstream.JetStream, names bus.Names, conv string) {
	results, err := js.Stream(ctx, names.ResultsStream())
	if err != nil {
		fmt.Fprintf(b, "\n  %s: %v", names.ResultsStream(), err)
		return
	}
	cons, err := js.OrderedConsumer(ctx, names.EventsStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{names.EventsOf(conv)}})
	if err != nil {
		fmt.Fprintf(b, "\n  tool calls: %v", err)
		return
	}
	for range 200 {
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := cons.Next(jetstream.FetchContext(fctx))
		cancel()
		if err != nil {
			return
		}
		var call struct {
			TaskID string `json:"taskid"`
			Agent  string `json:"agent"`
		}
		if json.Unmarshal(m.Data(), &call) != nil || call.TaskID == "" || call.Agent == "" {
			continue
		}
		subject := names.Result(call.Agent, call.TaskID)
		if rm, err := results.GetLastMsgForSubject(ctx, subject); err != nil {
			fmt.Fprintf(b, "\n  tool result on %s: %v", subject, err)
		} else {
			fmt.Fprintf(b, "\n  tool result on %s: stored at %s as sequence %d", subject, rm.Time.Format("15:04:05.000"), rm.Sequence)
		}
	}
}

// dumpHeld writes the messages a work-queue stream still holds (no
// consumer of its own can be made on one), by sequence.
func dumpHeld(ctx context.Context, b *strings.Builder, js jetstream.JetStream, stream string) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		fmt.Fprintf(b, "\n  %s: %v", stream, err)
		return
	}
	info, err := s.Info(ctx)
	if err != nil {
		fmt.Fprintf(b, "\n  %s: %v", stream, err)
		return
	}
	fmt.Fprintf(b, "\n  %s holds %d (sequences %d-%d)", stream, info.State.Msgs, info.State.FirstSeq, info.State.LastSeq)
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq < info.State.FirstSeq+200; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		fmt.Fprintf(b, "\n  held %s %s seq %d id %s", m.Time.Format("15:04:05.000"), m.Subject, seq, m.Header.Get(jetstream.MsgIDHeader))
	}
}

// dumpStream writes what stream holds on filter (for a work queue: what no
// consumer took yet) whose subject contains contains.
func dumpStream(ctx context.Context, b *strings.Builder, js jetstream.JetStream, stream, filter, what, contains string) {
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		fmt.Fprintf(b, "\n  %s %s: %v", stream, filter, err)
		return
	}
	for range 2000 {
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := cons.Next(jetstream.FetchContext(fctx))
		cancel()
		if err != nil {
			return
		}
		if !strings.Contains(m.Subject(), contains) {
			continue
		}
		meta, _ := m.Metadata()
		fmt.Fprintf(b, "\n  %s %s %s seq %d %v: %.400s", what, meta.Timestamp.Format("15:04:05.000"), m.Subject(), meta.Sequence.Stream, m.Headers(), m.Data())
	}
}

// firstFor is when the first outcome of a request accepted after t came:
// when the cluster served again (one in flight at t may be answered at
// once).
func (w *outcomeWatch) firstFor(reqs []request, t time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first time.Time
	for _, r := range reqs {
		if at, ok := w.at[r.id]; ok && r.at.After(t) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

// slowest is the longest time from acceptance to outcome.
func (w *outcomeWatch) slowest(reqs []request) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var d time.Duration
	for _, r := range reqs {
		d = max(d, w.at[r.id].Sub(r.at))
	}
	return d
}

// readOutcomes reads every outcome event stored so far, by run or
// conversation (the mesh is quiet: no more are coming).
func readOutcomes(t *testing.T, ctx context.Context, js jetstream.JetStream, names bus.Names) map[string][]bus.Event {
	t.Helper()
	var mu sync.Mutex
	got := map[string][]bus.Event{}
	done := make(chan struct{})
	cons, err := js.OrderedConsumer(ctx, names.EventsStream(), jetstream.OrderedConsumerConfig{FilterSubjects: outcomeFilters(names)})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if ev, err := bus.DecodeJS(m); err == nil {
			if id := outcomeID(ev); id != "" {
				got[id] = append(got[id], ev)
			}
		}
		if meta, err := m.Metadata(); err == nil && meta.NumPending == 0 && done != nil {
			close(done)
			done = nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("reading outcomes: the events stream was never read to its end")
	}
	mu.Lock()
	defer mu.Unlock()
	return got
}

// leadOn moves the leadership of every stream (buckets and the object
// store included) to node, so that cutting it off takes every stream's
// leader away at once. (Consumers keep theirs: a consumer stepdown with a
// preferred placement can leave the consumer without a leader.)
func leadOn(t *testing.T, ctx context.Context, js jetstream.JetStream, node string) {
	t.Helper()
	req, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": node}})
	leader := func(s jetstream.Stream) string {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if i, err := s.Info(actx); err == nil && i.Cluster != nil {
			return i.Cluster.Leader
		}
		return ""
	}
	streams := js.ListStreams(ctx)
	for info := range streams.Info() {
		name := info.Config.Name
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for try := 0; leader(s) != node; try++ {
			if try == 5 {
				t.Fatalf("stream %s: the leader is still %q, not %s", name, leader(s), node)
			}
			if _, err := js.Conn().Request("$JS.API.STREAM.LEADER.STEPDOWN."+name, req, 5*time.Second); err != nil {
				t.Logf("stream %s: stepdown: %v", name, err)
			}
			for range 20 { // the new leader takes over within a few heartbeats
				if leader(s) == node {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	if err := streams.Err(); err != nil {
		t.Fatal(err)
	}
}

// waitQuiet waits until the request and task streams are empty and no
// durable consumer of the mesh has anything pending or unacknowledged: no
// process holds a message, and none will be delivered again.
func waitQuiet(t *testing.T, ctx context.Context, js jetstream.JetStream, names bus.Names) {
	t.Helper()
	var why string
	for {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second) // a lost request holds one look, not the wait
		why = quiet(qctx, js, names)
		cancel()
		if why == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the mesh never went quiet: %s", why)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// quiet says what is still in flight, or "".
func quiet(ctx context.Context, js jetstream.JetStream, names bus.Names) string {
	for _, name := range []string{names.RequestsStream(), names.TasksStream(), names.ResultsStream()} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return err.Error()
		}
		info, err := s.Info(ctx)
		if err != nil {
			return err.Error()
		}
		if info.Config.Retention == jetstream.WorkQueuePolicy && info.State.Msgs > 0 {
			return fmt.Sprintf("%s holds %d messages", name, info.State.Msgs)
		}
		consumers := s.ListConsumers(ctx)
		for ci := range consumers.Info() {
			if ci.Config.Durable != "" && (ci.NumPending > 0 || ci.NumAckPending > 0) {
				return fmt.Sprintf("consumer %s of %s: %d pending, %d unacknowledged", ci.Name, name, ci.NumPending, ci.NumAckPending)
			}
		}
		if err := consumers.Err(); err != nil {
			return err.Error()
		}
	}
	return ""
}

// waitCurrent waits until node is the leader or a current replica of every
// stream it holds a replica of and returns when it was seen so, or the zero
// time and what was seen last if ctx ends first.
func waitCurrent(ctx context.Context, js jetstream.JetStream, node string) (time.Time, string) {
	var why string
	for {
		why = ""
		// One listing at most 5 s: a request of it lost while the cluster
		// settles would hold it until ctx ends.
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		streams := js.ListStreams(lctx)
		for info := range streams.Info() {
			name := info.Config.Name
			switch {
			case info.Cluster == nil || info.Cluster.Leader == "":
				why += fmt.Sprintf(" %s: no leader;", name)
				continue
			case info.Cluster.Leader == node:
				continue
			}
			i := slices.IndexFunc(info.Cluster.Replicas, func(p *jetstream.PeerInfo) bool { return p.Name == node })
			if i >= 0 && (!info.Cluster.Replicas[i].Current || info.Cluster.Replicas[i].Offline) {
				r := info.Cluster.Replicas[i]
				why += fmt.Sprintf(" %s: %s current=%v offline=%v lag=%d active=%s;", name, node, r.Current, r.Offline, r.Lag, r.Active)
			}
		}
		if err := streams.Err(); err != nil {
			why += " listing streams: " + err.Error()
		}
		cancel()
		if why == "" {
			return time.Now(), ""
		}
		select {
		case <-ctx.Done():
			return time.Time{}, why
		case <-time.After(200 * time.Millisecond):
		}
	}
}
