package benchsuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// The run-state scenarios (issue 24) measure what one step of a run costs
// as the run gets wider (wave), longer (chain, for_each) or older (chat
// turns), each next to the same tasks driven by hand through the same
// agent with one KV compare-and-set per result. Their parts run as
// separate processes (Env.Launch): an agents process serves both sides,
// the mesh side adds an orchestrator process; the hand-driven side runs in
// the benchmark's own process, where the mesh side's client runs. They use
// their own subject prefix (ShapePrefix), so no other orchestrator of the
// server takes their runs.

// ShapePrefix is the subject prefix of the run-state scenarios' mesh.
const ShapePrefix = "meshbench"

// The shape scenarios' agents, each answering at once with one TEXT output
// (as every real agent has one, which the orchestrator routes into the
// run's state): one with no input (wave, chain), one taking an item
// (for_each), and a search the offline chat planner calls (chat).
const (
	shapeEmit   = "BenchShapeEmit"
	shapeItem   = "BenchShapeItem"
	shapeSearch = "BenchShapeSearch"
)

// ShapeParallel is how many items of a for_each run at once, on both sides.
const ShapeParallel = 8

// ShapeSizes are the sizes of the wave, chain and for_each scenarios;
// those above DefaultShapeSize run only when named (--only wave-1000, or
// go test -bench 'Suite/wave-1000').
var ShapeSizes = []int{10, 100, 300, 1000}

// DefaultShapeSize is the largest size run by default.
const DefaultShapeSize = 100

// ChatTurns are the lengths of the chat scenarios' conversations; those
// above DefaultChatTurns run only when named.
var ChatTurns = []int{50, 200}

// DefaultChatTurns is the longest conversation run by default.
const DefaultChatTurns = 50

// chatMessage is every turn's message: the offline planner makes it one
// call of the search agent with query "sunsets".
const chatMessage = "find sunsets"

// ShapeAgents are the agents the agents process serves.
func ShapeAgents() []agents.Agent {
	item := schemas.AgentContract{Name: shapeItem, Capability: schemas.CapTransformation, Description: "takes one item, for benchmarks",
		Inputs:  []schemas.TypedInput{{Name: "item", DataType: schemas.TypeText, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}}
	search := schemas.AgentContract{Name: shapeSearch, Capability: schemas.CapSearch, Description: "finds text matching a query, for benchmarks",
		Params:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to look for"}},"required":["query"]}`),
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}}
	return []agents.Agent{
		pipeAgent(shapeEmit, []byte(`"word"`)),
		agents.Func(item, func(_ context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.AgentResult{Success: true, Agent: shapeItem,
				Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue("done", shapeItem)}}, nil
		}),
		agents.Func(search, func(_ context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			return schemas.AgentResult{Success: true, Agent: shapeSearch, Summary: "found 1",
				Outputs: map[string]schemas.TypedValue{"text": schemas.TextValue("found: "+ec.Param("query"), shapeSearch)}}, nil
		}),
	}
}

// shape is a wave, chain or for_each of n steps.
type shape struct {
	kind string // "wave", "chain", "foreach"
	n    int
}

func (s shape) id() string { return fmt.Sprintf("%s-%d", s.kind, s.n) }

// shapeIDs are the run-state scenarios' names, and those run by default.
func shapeIDs() (all, big []string) {
	for _, kind := range []string{"wave", "chain", "foreach"} {
		for _, n := range ShapeSizes {
			id := shape{kind, n}.id()
			all = append(all, id)
			if n > DefaultShapeSize {
				big = append(big, id)
			}
		}
	}
	for _, n := range ChatTurns {
		id := fmt.Sprintf("chat-%d", n)
		all = append(all, id)
		if n > DefaultChatTurns {
			big = append(big, id)
		}
	}
	return all, big
}

// spec is the pipeline of the shape.
func (s shape) spec() pipelinespec.PipelineSpec {
	p := client.NewPipeline("bench-" + s.kind)
	switch s.kind {
	case "wave":
		for i := range s.n {
			p.Step(fmt.Sprintf("s%d", i), shapeEmit)
		}
	case "chain":
		for i := range s.n {
			p.Step(fmt.Sprintf("s%d", i), shapeEmit)
			if i > 0 {
				p.After(fmt.Sprintf("s%d", i-1))
			}
		}
	case "foreach":
		p.SeedValue("items", schemas.TypeText, "", strings.Join(items(s.n), "\n")).
			Step("each", shapeItem).ForEach("seed.items", ShapeParallel)
	}
	return p.MustBuild()
}

// items are n item lines.
func items(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("item-%05d", i)
	}
	return out
}

// handTasks is the shape driven by hand: its tasks and how many are in
// flight at once.
func (s shape) handTasks() (tasks []handTask, window int) {
	switch s.kind {
	case "wave":
		return slices.Repeat([]handTask{{agent: shapeEmit}}, s.n), s.n
	case "chain":
		return slices.Repeat([]handTask{{agent: shapeEmit}}, s.n), 1
	}
	for _, it := range items(s.n) {
		tasks = append(tasks, handTask{agent: shapeItem, req: schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"item": schemas.TextValue(it, "bench")}}})
	}
	return tasks, ShapeParallel
}

// Shapes makes the run-state scenarios: it provisions their mesh (prefix
// ShapePrefix), starts the agents and orchestrator processes with
// env.Launch, and returns a pair per shape. The returned closer stops the
// processes and deletes the scenarios' streams and buckets.
func Shapes(ctx context.Context, env Env) ([]Pair, io.Closer, error) {
	if env.Launch == nil {
		return nil, nil, errors.New("the run-state scenarios (wave, chain, foreach, chat) run the orchestrator and the agents as separate processes, and this runner cannot start them (Env.Launch is nil)")
	}
	names := bus.MustNames(ShapePrefix)
	var closers []io.Closer
	closeAll := closerFunc(func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i].Close())
		}
		return errors.Join(errs...)
	})
	res, err := bus.Provision(ctx, env.JS, names, bus.ProvisionOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("provisioning the run-state scenarios' mesh (prefix %s): %w", ShapePrefix, err)
	}
	closers = append(closers, closerFunc(func() error { return deleteMesh(env.JS, names) }))
	senv := Env{NC: env.NC, JS: env.JS, Names: names, Res: res}
	for _, role := range Roles {
		p, err := startRole(env.Launch(role, names), role)
		if err != nil {
			return nil, nil, errors.Join(err, closeAll.Close())
		}
		closers = append(closers, p)
	}
	kv, err := countKV(ctx, env.NC, env.JS, names.RunsBucket(), names.ConversationsBucket())
	if err != nil {
		return nil, nil, errors.Join(err, closeAll.Close())
	}
	closers = append(closers, kv)
	h, err := newHand(ctx, senv)
	if err != nil {
		return nil, nil, errors.Join(err, closeAll.Close())
	}
	closers = append(closers, h)
	var pairs []Pair
	for _, kind := range []string{"wave", "chain", "foreach"} {
		for _, n := range ShapeSizes {
			s := shape{kind, n}
			tasks, window := s.handTasks()
			spec := s.spec()
			pairs = append(pairs, Pair{
				ID:        s.id(),
				Name:      fmt.Sprintf("%s of %d steps (orchestrator and agent processes)", kind, n),
				Unit:      "run",
				Baseliner: fmt.Sprintf("the same %d tasks by hand through the same agent process, %d in flight, one KV compare-and-set per result", n, window),
				Baseline: func(b *testing.B) {
					measureSteps(b, n, kv, func(stepDone func()) (time.Duration, error) {
						var took time.Duration
						err := h.runTimed(ctx, tasks, window, func(_ int, d time.Duration) { took = d; stepDone() })
						return took, err
					})
				},
				Mesh: func(b *testing.B) {
					measureSteps(b, n, kv, func(stepDone func()) (time.Duration, error) {
						return awaitRun(ctx, senv, spec, fmt.Sprintf("bench-%s-%d", s.id(), time.Now().UnixNano()), stepDone)
					})
				},
			})
		}
	}
	for _, n := range ChatTurns {
		pairs = append(pairs, chatPair(ctx, senv, h, kv, n))
	}
	return pairs, closeAll, nil
}

// deleteMesh deletes the streams, buckets and object store of names.
func deleteMesh(js jetstream.JetStream, names bus.Names) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, s := range []string{names.RequestsStream(), names.TasksStream(), names.ResultsStream(), names.EventsStream(), names.DeadStream()} {
		if err := js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			errs = append(errs, fmt.Errorf("deleting stream %s: %w", s, err))
		}
	}
	for _, b := range []string{names.AgentsBucket(), names.ConversationsBucket(), names.RunsBucket()} {
		if err := js.DeleteKeyValue(ctx, b); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			errs = append(errs, fmt.Errorf("deleting bucket %s: %w", b, err))
		}
	}
	if err := js.DeleteObjectStore(ctx, names.FilesStore()); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		errs = append(errs, fmt.Errorf("deleting object store %s: %w", names.FilesStore(), err))
	}
	return errors.Join(errs...)
}

// measureSteps runs op (one run of steps steps, calling stepDone as each
// step ends) once per iteration of b.Loop and reports, besides its p50 and
// p99, the time per step (p50 over steps), the KV writes and bytes written
// per step (see kvCounter; counted from before the first run until the
// writes after the last one settled), and the time per step of the run's first tenth
// of steps and of its last tenth (ns/step@first-tenth, @last-tenth: flat
// when a step costs the same late in the run as early).
func measureSteps(b *testing.B, steps int, kv *kvCounter, op func(stepDone func()) (time.Duration, error)) {
	kv.settle()
	from := kv.read()
	var (
		durs        = make([]time.Duration, 0, b.N)
		first, last time.Duration
		tenth       = steps / 10
		allMarked   = tenth > 0
		mu          sync.Mutex
		marks       []time.Duration
		runStart    time.Time
		markStep    = func() { mu.Lock(); marks = append(marks, time.Since(runStart)); mu.Unlock() }
		takeMarks   = func() []time.Duration { mu.Lock(); defer mu.Unlock(); m := marks; marks = nil; return m }
	)
	for b.Loop() {
		mu.Lock()
		runStart = time.Now()
		mu.Unlock()
		d, err := op(markStep)
		if err != nil {
			fail(b, err)
		}
		durs = append(durs, d)
		if m := takeMarks(); len(m) == steps && allMarked {
			first += m[tenth-1]
			last += m[steps-1] - m[steps-tenth-1]
		} else {
			allMarked = false
		}
	}
	kv.settle()
	recordLatency(b, durs)
	b.ReportMetric(float64(P50(durs))/float64(steps), "ns/step")
	kv.read().minus(from).report(b, float64(len(durs)*steps), "step")
	if allMarked {
		per := float64(len(durs) * tenth)
		b.ReportMetric(float64(first)/per, "ns/step@first-tenth")
		b.ReportMetric(float64(last)/per, "ns/step@last-tenth")
	}
}

// handTask is one task of the hand-driven side.
type handTask struct {
	agent string
	req   schemas.TaskRequest
}

// hand drives tasks by hand through the shape agents: it publishes each
// task to MESH_TASKS with its reply subject under its own prefix, takes
// the results from MESH_RESULTS with a durable consumer, and records each
// result with one KV compare-and-set of the run's key.
type hand struct {
	env Env
	resultsReader
}

func newHand(ctx context.Context, env Env) (*hand, error) {
	// An agent answers only on its own result subjects: the hand's are
	// <prefix>.result.<agent>.hand.<task>.
	rr, err := readResults(ctx, env, "bench-hand", env.Names.Result("*", "hand")+".>", jetstream.DeliverNewPolicy)
	if err != nil {
		return nil, fmt.Errorf("the hand-driven side's consumer: %w", err)
	}
	return &hand{env: env, resultsReader: rr}, nil
}

// resultsReader is a baseline's durable consumer of the results stream,
// read as messages come.
type resultsReader struct {
	env     Env
	it      jetstream.MessagesContext
	durable string
}

// readResults makes durable, a consumer of the results on filter, and
// starts reading it.
func readResults(ctx context.Context, env Env, durable, filter string, deliver jetstream.DeliverPolicy) (resultsReader, error) {
	rr := resultsReader{env: env, durable: durable}
	cons, err := env.JS.CreateOrUpdateConsumer(ctx, env.Names.ResultsStream(), jetstream.ConsumerConfig{
		Durable: durable, FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: deliver,
	})
	if err != nil {
		return rr, err
	}
	rr.it, err = cons.Messages()
	return rr, err
}

// Close stops the consumer and deletes it.
func (rr resultsReader) Close() error {
	rr.it.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rr.env.JS.DeleteConsumer(ctx, rr.env.Names.ResultsStream(), rr.durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return err
	}
	return nil
}

// runTimed drives tasks by hand: it creates the run's key, publishes the
// first window tasks, and for each result (in any order) updates the key
// with a compare-and-set and publishes the next task, until every task
// answered. done is called after each result's update with its index
// among the results and the time since the start.
func (h *hand) runTimed(ctx context.Context, tasks []handTask, window int, done func(i int, since time.Duration)) error {
	key := fmt.Sprintf("hand-%d", time.Now().UnixNano())
	start := time.Now()
	rev, err := h.env.Res.Runs.Create(ctx, key, []byte(`{"done":0}`))
	if err != nil {
		return err
	}
	var acks []jetstream.PubAckFuture
	next := 0
	publish := func() error {
		t := tasks[next]
		ev, err := bus.NewEvent(bus.TypeTaskRequested, "/bench/hand", t.req)
		if err != nil {
			return err
		}
		ev.ID = fmt.Sprintf("%s-%d", key, next)
		ev.SetExt(bus.ExtReplyTo, h.env.Names.Result(t.agent, "hand")+"."+ev.ID)
		ev.SetExt(bus.ExtDeadline, time.Now().Add(time.Minute).UTC().Format(time.RFC3339))
		subj, err := h.env.Names.Task(t.agent)
		if err != nil {
			return err
		}
		msg, err := bus.Encode(subj, ev)
		if err != nil {
			return err
		}
		msg.Header.Set(jetstream.MsgIDHeader, ev.ID)
		f, err := h.env.JS.PublishMsgAsync(msg)
		if err != nil {
			return fmt.Errorf("publishing task %d of %d: %w", next+1, len(tasks), err)
		}
		acks = append(acks, f)
		next++
		return nil
	}
	for next < min(window, len(tasks)) {
		if err := publish(); err != nil {
			return err
		}
	}
	ours := ".hand." + key + "-"
	for i := 0; i < len(tasks); {
		msg, err := h.it.Next(jetstream.NextMaxWait(time.Minute))
		if err != nil {
			return fmt.Errorf("%d of %d results: %w", i, len(tasks), err)
		}
		_ = msg.Ack()
		if !strings.Contains(msg.Subject(), ours) {
			continue // a result of an earlier, failed run
		}
		if rev, err = h.env.Res.Runs.Update(ctx, key, fmt.Appendf(nil, `{"done":%d}`, i+1), rev); err != nil {
			return err
		}
		done(i, time.Since(start))
		i++
		if next < len(tasks) {
			if err := publish(); err != nil {
				return err
			}
		}
	}
	return asyncAcks(acks)
}

// asyncAcks is the first error of the asynchronous publishes fs, each
// awaited for up to ten seconds.
func asyncAcks(fs []jetstream.PubAckFuture) error {
	timeout := time.After(10 * time.Second)
	for i, f := range fs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("publish %d of %d was not stored: %w", i+1, len(fs), err)
		case <-timeout:
			return fmt.Errorf("publish %d of %d: no acknowledgement after ten seconds", i+1, len(fs))
		}
	}
	return nil
}
