package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents/builtin/imagesearch"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// soakShort is the soak's length under go test ./... (and -short): long
// enough to inject every fault once. CI runs the real one with
// AGENTMESH_SOAK=3m (.ci/run).
const soakShort = 20 * time.Second

// soakDuration is AGENTMESH_SOAK (a Go duration), else soakShort.
func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("AGENTMESH_SOAK")
	if v == "" || testing.Short() {
		t.Logf("a %s soak; set AGENTMESH_SOAK=3m for the one CI runs", soakShort)
		return soakShort
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 10*time.Second {
		t.Fatalf("AGENTMESH_SOAK=%q: give a Go duration of at least 10s, e.g. 3m", v)
	}
	return d
}

// TestSoak runs the mesh as separate processes (a NATS server, two
// orchestrator replicas, two TextAgent instances, an ImageSearchAgent and
// a gateway) under a steady mixed load on every surface: tasks published to
// TextAgent, pipelines with a for_each and an inline sub-pipeline, chat
// turns the offline planner answers, tasks through the gateway's HTTP API
// and file uploads into the object store. While the load runs it SIGKILLs
// a TextAgent, an orchestrator replica and the server, restarting each (the
// server on the same store and port). It samples every process's resident
// memory and every stream's and bucket's bytes and messages, and checks:
//
//   - every accepted request ended exactly once: one result, one run end,
//     one chat answer per request (an upload: its content read back);
//   - resident memory is flat: each role's highest sample in the last third
//     is within half again plus 32 MiB of its highest in the first third;
//   - storage is flat: with every age set to a sixth of the soak, each
//     stream's highest byte count in the last third is within half again
//     plus 1 MiB of its highest once the ages applied (from one age in,
//     for a third of the soak); the work queues end empty; no stream's
//     consumers pile up (last third within half again plus ten of the
//     first).
//
// It writes soak-report.json (samples, counts, outcomes, recovery times)
// to $AGENTMESH_ARTIFACTS.
func TestSoak(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads resident memory from /proc (Linux only)")
	}
	d := soakDuration(t)
	s := newSoak(t, d)
	s.start(t)
	s.run(t)
	s.check(t)
	s.writeReport(t)
}

// soakAge is the age of results, events, dead letters and state in the
// soak: a sixth of it, between 10 s and a minute.
func soakAge(d time.Duration) time.Duration {
	return min(max(d/6, 10*time.Second), time.Minute)
}

// soakProc is one role's process; a restart replaces p.
type soakProc struct {
	role    string
	args    []string
	re      *regexp.Regexp
	p       *proctest.Proc
	metrics string // the /metrics URL of a process started with --metrics-addr
}

// soakRequest is one request the load sent and the mesh accepted.
type soakRequest struct {
	Kind     string    `json:"kind"` // task, http_task, pipeline, chat, upload
	ID       string    `json:"id"`
	Accepted time.Time `json:"-"`
	Outcomes []string  `json:"outcomes"` // "completed", "failed:<code>", ...
	Took     float64   `json:"took_s,omitempty"`
}

type soakSample struct {
	At      float64          `json:"at_s"`
	RSS     map[string]int64 `json:"rss_bytes"`
	Heap    map[string]int64 `json:"heap_inuse_bytes,omitempty"` // of the processes serving /metrics
	Bytes   map[string]int64 `json:"stream_bytes,omitempty"`
	Msgs    map[string]int64 `json:"stream_msgs,omitempty"`
	Cons    map[string]int64 `json:"stream_consumers,omitempty"`
	Missing string           `json:"missing,omitempty"` // why storage was not read
}

type soakFault struct {
	What      string  `json:"what"`
	At        float64 `json:"at_s"`
	Restarted float64 `json:"restarted_after_s"` // the new process ready
	Recovered float64 `json:"recovered_after_s"` // a probe request sent after the kill ended
	Probe     string  `json:"probe"`
}

type soak struct {
	d, age  time.Duration
	bin     string
	store   string
	port    int
	url     string
	started time.Time
	procs   map[string]*soakProc
	httpURL string
	nc      *nats.Conn
	js      jetstream.JetStream
	names   bus.Names
	res     *bus.Resources

	mu       sync.Mutex
	reqs     map[string]*soakRequest // by kind + "/" + id (task/ for tasks through the gateway too)
	early    map[string][]string     // outcomes read before their request's publish was acknowledged
	refused  map[string]int          // by kind: not accepted (the server was down)
	samples  []soakSample
	faults   []soakFault
	profiles [][]byte // the server's heap profiles (heapProfiles)
}

func newSoak(t *testing.T, d time.Duration) *soak {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return &soak{d: d, age: soakAge(d), bin: agentBinary(t), store: t.TempDir(), port: port,
		url: fmt.Sprintf("nats://127.0.0.1:%d", port), names: bus.MustNames(bus.DefaultPrefix),
		procs: map[string]*soakProc{}, reqs: map[string]*soakRequest{}, early: map[string][]string{}, refused: map[string]int{}}
}

func (s *soak) elapsed() float64 { return time.Since(s.started).Seconds() }

// spawn starts (or restarts) role and waits until it is ready.
func (s *soak) spawn(t *testing.T, role string) *soakProc {
	t.Helper()
	sp := s.procs[role]
	cmd := exec.Command(s.bin, sp.args...)
	cmd.Env = append(cleanEnv(), "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	p := proctest.Start(t, cmd, sp.re)
	s.mu.Lock() // the sampler reads sp.p
	sp.p, sp.metrics = p, ""
	s.mu.Unlock()
	m := p.WaitReady(t)
	if role == "gateway" {
		s.httpURL = m[1]
	}
	if slices.Contains(sp.args, "--metrics-addr") {
		metricsOn := regexp.MustCompile(`metrics on (http://\S+/metrics)`)
		var m []string
		if !fixture.Within(proctest.ReadyTimeout, func() bool {
			m = metricsOn.FindStringSubmatch(sp.p.Stderr.String())
			return m != nil
		}) {
			t.Fatalf("%s printed no metrics address:\n%s", role, sp.p.Stderr)
		}
		s.mu.Lock()
		sp.metrics = m[1]
		s.mu.Unlock()
	}
	return sp
}

func (s *soak) add(role string, re *regexp.Regexp, args ...string) {
	s.procs[role] = &soakProc{role: role, args: args, re: re}
}

// start provisions the mesh with short ages, stores the sample images and
// starts every process.
func (s *soak) start(t *testing.T) {
	// The server's Go heap (from its /metrics) tells a leak from the
	// garbage collector's slack in its resident memory.
	s.add("server", regexp.MustCompile(`listening on (nats://\S+)`), "server", "--port", fmt.Sprint(s.port), "--store", s.store, "--metrics-addr", "127.0.0.1:0", "--pprof")
	s.spawn(t, "server")
	nc, err := nats.Connect(s.url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s.nc = nc
	if s.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.res, err = bus.Provision(ctx, s.js, s.names, bus.ProvisionOptions{
		ResultsMaxAge: s.age, EventsMaxAge: s.age, RunsTTL: s.age, ConversationsTTL: s.age,
		DeadMaxAge: s.age, RequestsMaxAge: s.age, TasksMaxAge: s.age,
	})
	if err != nil {
		t.Fatal(err)
	}
	store := resolvers.NewObjectStore(s.res.Files)
	for _, img := range samples.Images() {
		if _, err := store.Store(ctx, bytes.NewReader(img.Content), img.MediaType, img.Metadata()); err != nil {
			t.Fatal(err)
		}
	}
	ready := regexp.MustCompile(`ready`)
	wait := []string{"--connect-wait", "2m"}
	for i := range 2 {
		s.add(fmt.Sprintf("orchestrator-%d", i+1), ready, append([]string{"orchestrator", "--nats", s.url, "--ack-wait", "2s"}, wait...)...)
		s.add(fmt.Sprintf("TextAgent-%d", i+1), agentReady, append([]string{"agent", text.Name, "--nats", s.url, "--heartbeat", "1s", "--ack-wait", "3s", "--concurrency", "8"}, wait...)...)
	}
	s.add(imagesearch.Name, agentReady, append([]string{"agent", imagesearch.Name, "--nats", s.url, "--heartbeat", "1s", "--ack-wait", "3s"}, wait...)...)
	s.add("gateway", dashboardURL, "gateway", "--nats", s.url, "--http", "127.0.0.1:0")
	for _, role := range s.roles() {
		if role != "server" {
			s.spawn(t, role)
		}
	}
	rctx, rcancel := context.WithCancel(context.Background())
	defer rcancel()
	reg, err := client.NewRegistry(rctx, s.res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]int{text.Name: 2, imagesearch.Name: 1} {
		if err := reg.Wait(ctx, name, n); err != nil {
			t.Fatalf("%s is not listed with %d instances: %v", name, n, err)
		}
	}
	s.started = time.Now()
}

func (s *soak) roles() []string {
	roles := make([]string, 0, len(s.procs))
	for r := range s.procs {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	return roles
}

// run drives the load for s.d, injecting the faults, then waits for every
// accepted request's outcome.
func (s *soak) run(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), s.d)
	defer cancel()
	var wg sync.WaitGroup
	tail, stopTail := context.WithCancel(context.Background())
	defer stopTail()
	wg.Go(func() { s.tail(tail, s.names.ResultsStream(), "mesh.result."+text.Name+".>") })
	wg.Go(func() { s.tail(tail, s.names.EventsStream(), "mesh.events.*.pipeline", "mesh.events.*.chat") })
	var load sync.WaitGroup
	every := func(period time.Duration, f func(ctx context.Context, i int) string) {
		load.Go(func() {
			tick := time.NewTicker(period)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					load.Go(func() { f(ctx, i) })
				}
			}
		})
	}
	every(50*time.Millisecond, s.sendTask)
	every(500*time.Millisecond, s.sendPipeline)
	every(time.Second, s.sendChat)
	every(200*time.Millisecond, s.sendHTTPTask)
	every(time.Second, s.upload)
	load.Go(func() { s.sample(ctx) })
	load.Go(func() { s.inject(ctx, t) })
	load.Go(func() { s.heapProfiles(ctx, t) })
	load.Wait()

	// Every accepted request gets its outcome within a minute of the load's
	// end (a task held by the killed agent comes back after its ack wait).
	fixture.Within(time.Minute, func() bool { return s.pending() == 0 })
	time.Sleep(2 * time.Second) // a duplicate outcome would come now
	s.sampleOnce(context.Background())
	stopTail()
	wg.Wait()
}

// inject SIGKILLs a TextAgent at a quarter of the soak, an orchestrator
// replica at two fifths and the server at three fifths, restarting each.
func (s *soak) inject(ctx context.Context, t *testing.T) {
	for _, f := range []struct {
		at   float64
		role string
	}{{0.25, "TextAgent-1"}, {0.4, "orchestrator-1"}, {0.6, "server"}} {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(s.started.Add(time.Duration(f.at * float64(s.d))))):
		}
		sp := s.procs[f.role]
		killed := time.Now()
		if err := sp.p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Errorf("SIGKILL %s: %v", f.role, err)
			return
		}
		<-sp.p.Exited()
		if f.role == "server" {
			time.Sleep(time.Second) // a second without the server
		}
		s.spawn(t, f.role)
		restarted := time.Since(killed)
		probe := s.probe(t, f.role)
		s.mu.Lock()
		s.faults = append(s.faults, soakFault{What: "SIGKILL " + f.role, At: killed.Sub(s.started).Seconds(),
			Restarted: restarted.Seconds(), Recovered: time.Since(killed).Seconds(), Probe: probe})
		s.mu.Unlock()
		t.Logf("SIGKILL %s at %.1fs: restarted in %s, a %s sent after it ended %s after the kill", f.role, killed.Sub(s.started).Seconds(),
			restarted.Round(time.Millisecond), probe, time.Since(killed).Round(time.Millisecond))
	}
}

// probe sends a request the killed role serves, retrying until one is
// accepted, and waits for its outcome.
func (s *soak) probe(t *testing.T, role string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kind := "pipeline"
	if strings.HasPrefix(role, "TextAgent") {
		kind = "task"
	}
	for ctx.Err() == nil {
		var key string
		if kind == "task" {
			key = s.sendTask(ctx, -1)
		} else {
			key = s.sendPipeline(ctx, -1)
		}
		if key == "" {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ctx.Err() == nil {
			s.mu.Lock()
			n := len(s.reqs[key].Outcomes)
			s.mu.Unlock()
			if n > 0 {
				return kind
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Errorf("no %s sent after SIGKILL %s ended within a minute", kind, role)
	return kind
}

// accept records a request the mesh accepted, or counts a refusal.
func (s *soak) accept(kind, id string, err error) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.refused[kind]++
		return ""
	}
	key := kind + "/" + id
	if kind == "http_task" {
		key = "task/" + id // results are read alike
	}
	r := &soakRequest{Kind: kind, ID: id, Accepted: time.Now(), Outcomes: s.early[key]}
	delete(s.early, key)
	s.reqs[key] = r
	return key
}

func (s *soak) publishTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 5*time.Second)
}

func (s *soak) sendTask(ctx context.Context, i int) string {
	pctx, cancel := s.publishTimeout(ctx)
	defer cancel()
	ops := []string{"upper", "lower", "reverse", "title", "wordcount"}
	req := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue(fmt.Sprintf("soak task %d", i), "soak")},
		Params: map[string]any{"op": ops[(i%len(ops)+len(ops))%len(ops)]}}
	id, err := client.NewDispatcher(s.js, s.names, "soak").Dispatch(pctx, text.Name, req, client.DispatchMeta{})
	return s.accept("task", id, err)
}

// sendPipeline submits a run of a for_each over three words, then an
// inline sub-pipeline that upper-cases the merged text, then a word count.
func (s *soak) sendPipeline(ctx context.Context, i int) string {
	child := client.NewPipeline("soak-child").SeedValue("text", schemas.TypeText, "", "child").
		Step("up", text.Name).Param("op", "upper").Input("text", "seed.text").MustBuild()
	spec := client.NewPipeline("soak").Var("words", []string{"red fish", "blue fish", fmt.Sprintf("fish %d", i)}).
		Step("each", text.Name).Param("op", "title").ForEach("vars.words", 3).
		SubPipeline("sub", child).After("each").MapIn("text", "each.text").MapOut("out", "up.text").
		Step("count", text.Name).After("sub").Param("op", "wordcount").Input("text", "sub.out").MustBuild()
	pctx, cancel := s.publishTimeout(ctx)
	defer cancel()
	run := fmt.Sprintf("soak-%d-%d", time.Now().UnixNano(), i+1)
	id, err := client.SubmitPipeline(pctx, s.js, s.names, spec, run, "soak")
	return s.accept("pipeline", id, err)
}

func (s *soak) sendChat(ctx context.Context, i int) string {
	pctx, cancel := s.publishTimeout(ctx)
	defer cancel()
	conv, _, err := client.SendChat(pctx, s.js, s.names, "", "find sunset images", "soak")
	return s.accept("chat", conv, err)
}

func (s *soak) sendHTTPTask(ctx context.Context, i int) string {
	body := fmt.Sprintf(`{"inputs":{"text":{"data_type":"TEXT","value":"http task %d"}},"params":{"op":"upper"}}`, i)
	var ans struct {
		TaskID string `json:"task_id"`
	}
	err := s.post(ctx, "/api/agents/"+text.Name+"/tasks?wait=false", "application/json", strings.NewReader(body), http.StatusAccepted, &ans)
	return s.accept("http_task", ans.TaskID, err)
}

// upload stores a file through the gateway, reads it back and removes it
// (a client cleaning up after itself): one answer each, content intact.
func (s *soak) upload(ctx context.Context, i int) string {
	content := strings.Repeat(fmt.Sprintf("soak upload %d\n", i), 2000)
	var ref schemas.FileRef
	err := s.post(ctx, fmt.Sprintf("/api/files?name=soak-%d.txt", i), "text/plain", strings.NewReader(content), http.StatusCreated, &ref)
	key := s.accept("upload", ref.ID, err)
	if key == "" {
		return ""
	}
	outcome := "completed"
	got, err := s.get(ctx, "/api/files/"+ref.ID+"/content")
	if err != nil {
		outcome = "read back: " + err.Error()
	} else if string(got) != content {
		outcome = fmt.Sprintf("corrupt: read back %d bytes of %d", len(got), len(content))
	}
	dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := resolvers.NewObjectStore(s.res.Files).Delete(dctx, ref.ID); err != nil && outcome == "completed" {
		outcome = "delete: " + err.Error()
	}
	s.outcome(key, outcome)
	return key
}

func (s *soak) post(ctx context.Context, path, contentType string, body io.Reader, want int, into any) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, s.httpURL+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s: %d %s", path, resp.StatusCode, b)
	}
	return json.Unmarshal(b, into)
}

func (s *soak) get(ctx context.Context, path string) ([]byte, error) {
	return s.getURL(ctx, s.httpURL+path)
}

func (s *soak) getURL(ctx context.Context, u string) ([]byte, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%d %s", resp.StatusCode, b)
	}
	return b, err
}

func (s *soak) outcome(key, outcome string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reqs[key]
	if r == nil {
		// Not accepted yet (or never: the orchestrator's own tasks, a
		// request whose acknowledgement was lost).
		s.early[key] = append(s.early[key], outcome)
		return
	}
	r.Outcomes = append(r.Outcomes, outcome)
	if len(r.Outcomes) == 1 {
		r.Took = time.Since(r.Accepted).Seconds()
	}
}

func (s *soak) pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.reqs {
		if len(r.Outcomes) == 0 {
			n++
		}
	}
	return n
}

// tail reads the final events on subjects of stream from its start,
// resuming after the last one read when the server goes away, and records
// each as an outcome.
func (s *soak) tail(ctx context.Context, stream string, subjects ...string) {
	var last uint64
	for ctx.Err() == nil {
		cfg := jetstream.OrderedConsumerConfig{FilterSubjects: subjects}
		if last > 0 {
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, last+1
		}
		cons, err := s.js.OrderedConsumer(ctx, stream, cfg)
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		it, err := cons.Messages()
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for {
			m, err := it.Next(jetstream.NextContext(ctx))
			if errors.Is(err, jetstream.ErrOrderedConsumerReset) {
				continue
			}
			if err != nil {
				break
			}
			if md, err := m.Metadata(); err == nil {
				last = md.Sequence.Stream
			}
			s.record(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
		}
		it.Stop()
	}
}

// record reads a final event: a task's result, a run's end or a chat
// answer.
func (s *soak) record(msg *nats.Msg) {
	ev, err := bus.Decode(msg)
	if err != nil {
		return
	}
	switch ev.Type {
	case bus.TypeTaskCompleted, bus.TypeTaskFailed:
		var r schemas.AgentResult
		out := "completed"
		if err := ev.DataAs(&r); err != nil {
			out = "undecodable"
		} else if !r.Success {
			out = "failed"
			if r.Error != nil {
				out += ":" + r.Error.Code
			}
		}
		s.outcome("task/"+msg.Subject[strings.LastIndexByte(msg.Subject, '.')+1:], out)
	case bus.TypePipelineCompleted:
		var r schemas.RunEvent
		out := "undecodable"
		if ev.DataAs(&r) == nil {
			out = string(r.Status)
			if r.Code != "" {
				out += ":" + r.Code
			}
		}
		id := strings.TrimSuffix(strings.TrimPrefix(msg.Subject, "mesh.events."), ".pipeline")
		if strings.HasSuffix(id, "-sub") { // a child run's end, not a request's
			return
		}
		s.outcome("pipeline/"+id, out)
	case bus.TypeChatResponded:
		var r schemas.ChatResponse
		out := "undecodable"
		if ev.DataAs(&r) == nil {
			out = string(r.State)
			if r.Code != "" {
				out += ":" + r.Code
			}
		}
		s.outcome("chat/"+strings.TrimSuffix(strings.TrimPrefix(msg.Subject, "mesh.events."), ".chat"), out)
	}
}

// sample reads every process's resident memory and the storage every
// second until ctx ends.
func (s *soak) sample(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		s.sampleOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (s *soak) sampleOnce(ctx context.Context) {
	smp := soakSample{At: s.elapsed(), RSS: map[string]int64{}, Bytes: map[string]int64{}, Msgs: map[string]int64{}, Cons: map[string]int64{}}
	s.mu.Lock()
	procs := make(map[string]int, len(s.procs))
	metrics := map[string]string{}
	for role, sp := range s.procs {
		if sp.p != nil {
			procs[role] = sp.p.Cmd.Process.Pid
		}
		if sp.metrics != "" {
			metrics[role] = sp.metrics
		}
	}
	s.mu.Unlock()
	for role, pid := range procs {
		if v, err := vmRSS(pid); err == nil {
			smp.RSS[role] = v
		}
	}
	for role, u := range metrics {
		if v, ok := heapInuse(ctx, u); ok {
			if smp.Heap == nil {
				smp.Heap = map[string]int64{}
			}
			smp.Heap[role] = v
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	streams := s.js.ListStreams(sctx)
	for info := range streams.Info() {
		smp.Bytes[info.Config.Name] = int64(info.State.Bytes)
		smp.Msgs[info.Config.Name] = int64(info.State.Msgs)
		smp.Cons[info.Config.Name] = int64(info.State.Consumers)
	}
	if err := streams.Err(); err != nil {
		smp.Missing = err.Error()
		smp.Bytes, smp.Msgs, smp.Cons = nil, nil, nil
	}
	s.mu.Lock()
	s.samples = append(s.samples, smp)
	s.mu.Unlock()
}

// vmRSS is the resident memory of pid, from /proc; an error once it is
// gone.
func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			_, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("pid %d: no VmRSS (a zombie)", pid)
}

// heapProfiles keeps two heap profiles of the server, at a fifth of the
// soak and just before it is killed (at three fifths), for
// go tool pprof -base soak-server-heap-1.pb.gz soak-server-heap-2.pb.gz.
func (s *soak) heapProfiles(ctx context.Context, t *testing.T) {
	for _, at := range []float64{0.2, 0.58} {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(s.started.Add(time.Duration(at * float64(s.d))))):
		}
		s.mu.Lock()
		u := strings.TrimSuffix(s.procs["server"].metrics, "/metrics") + "/debug/pprof/heap"
		s.mu.Unlock()
		b, err := s.getURL(ctx, u)
		if err != nil {
			t.Logf("no heap profile of the server: %v", err)
			return
		}
		s.mu.Lock()
		s.profiles = append(s.profiles, b)
		s.mu.Unlock()
	}
}

// heapInuse reads go_memstats_heap_inuse_bytes from a /metrics URL.
func heapInuse(ctx context.Context, u string) (int64, bool) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			var v float64
			if _, err := fmt.Sscan(strings.TrimSpace(rest), &v); err == nil {
				return int64(v), true
			}
		}
	}
	return 0, false
}

// windowMax is the highest value of key in get over the samples taken in
// [from, to) seconds.
func (s *soak) windowMax(from, to float64, get func(soakSample) (int64, bool)) (int64, bool) {
	var top int64
	seen := false
	for _, smp := range s.samples {
		if smp.At < from || smp.At >= to {
			continue
		}
		if v, ok := get(smp); ok {
			top, seen = max(top, v), true
		}
	}
	return top, seen
}

func (s *soak) check(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.d.Seconds()
	third := d / 3
	// Every accepted request ended exactly once.
	byKind := map[string]map[string]int{}
	for _, r := range s.reqs {
		if byKind[r.Kind] == nil {
			byKind[r.Kind] = map[string]int{}
		}
		switch len(r.Outcomes) {
		case 0:
			byKind[r.Kind]["no outcome"]++
			t.Errorf("%s %s accepted %.1fs in: no outcome", r.Kind, r.ID, r.Accepted.Sub(s.started).Seconds())
		case 1:
			byKind[r.Kind][r.Outcomes[0]]++
		default:
			byKind[r.Kind]["more than one outcome"]++
			t.Errorf("%s %s ended %d times: %q", r.Kind, r.ID, len(r.Outcomes), r.Outcomes)
		}
	}
	for kind, outs := range byKind {
		t.Logf("%-9s accepted %d (refused at submit %d): %v", kind, sumCounts(outs), s.refused[kind], outs)
		for out, n := range outs {
			// Each request the load sends is one the mesh can serve: any
			// other ending is a fault it did not recover from.
			if out != "completed" && !strings.HasPrefix(out, "no outcome") && !strings.HasPrefix(out, "more than") {
				t.Errorf("%d %s requests ended %s, not completed", n, kind, out)
			}
		}
	}
	for _, kind := range []string{"task", "http_task", "pipeline", "chat", "upload"} {
		if sumCounts(byKind[kind]) == 0 {
			t.Errorf("no %s was accepted in the soak", kind)
		}
	}
	if len(s.faults) != 3 {
		t.Errorf("%d faults injected, want 3: %+v", len(s.faults), s.faults)
	}

	// Resident memory: each role's highest sample in the last third within
	// half again plus 32 MiB of its highest in the first third.
	for _, role := range s.roles() {
		get := func(smp soakSample) (int64, bool) { v, ok := smp.RSS[role]; return v, ok }
		first, ok1 := s.windowMax(0, third, get)
		last, ok2 := s.windowMax(2*third, d+1e9, get)
		if !ok1 || !ok2 {
			t.Errorf("%s: no RSS samples in the first or last third", role)
			continue
		}
		bound := first + first/2 + 32<<20
		heap := ""
		getHeap := func(smp soakSample) (int64, bool) { v, ok := smp.Heap[role]; return v, ok }
		if h1, ok := s.windowMax(0, third, getHeap); ok {
			h3, _ := s.windowMax(2*third, d+1e9, getHeap)
			heap = fmt.Sprintf("; Go heap in use %s, %s", mib(h1), mib(h3))
		}
		t.Logf("RSS %-16s first third max %s, last third max %s (bound %s)%s", role, mib(first), mib(last), mib(bound), heap)
		if last > bound {
			t.Errorf("%s's resident memory grew: %s at most in the first third, %s in the last; want at most %s", role, mib(first), mib(last), mib(bound))
		}
	}

	// Storage: each stream's highest bytes in the last third within half
	// again plus 1 MiB of its highest in the third after one age went by.
	age := s.age.Seconds()
	var names []string
	for _, smp := range s.samples {
		for name := range smp.Bytes {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	for _, name := range names {
		get := func(smp soakSample) (int64, bool) { v, ok := smp.Bytes[name]; return v, ok }
		base, _ := s.windowMax(age, age+third, get)
		last, _ := s.windowMax(2*third, d+1e9, get)
		bound := base + base/2 + 1<<20
		t.Logf("storage %-22s after one age %s, last third %s (bound %s)", name, mib(base), mib(last), mib(bound))
		if age+third > 2*third {
			continue // too short a soak for ages to apply before its last third
		}
		if last > bound {
			t.Errorf("stream %s grew: %s at most once its ages applied, %s in the last third; want at most %s", name, mib(base), mib(last), mib(bound))
		}
	}
	// Consumers: each stream's in the last third at most half again plus
	// ten more than in the first (a reader that stops leaves none behind).
	for _, name := range names {
		get := func(smp soakSample) (int64, bool) { v, ok := smp.Cons[name]; return v, ok }
		first, _ := s.windowMax(0, third, get)
		last, _ := s.windowMax(2*third, d+1e9, get)
		if bound := first + first/2 + 10; last > bound {
			t.Errorf("consumers of %s grew: %d at most in the first third, %d in the last; want at most %d", name, first, last, bound)
		}
	}
	if age+third > 2*third {
		t.Logf("storage not checked flat: a %s soak is too short for its ages (%s) to apply before its last third", s.d, s.age)
	}
	end := s.samples[len(s.samples)-1]
	for _, q := range []string{s.names.TasksStream(), s.names.RequestsStream()} {
		if n := end.Msgs[q]; n != 0 {
			t.Errorf("work queue %s holds %d messages after every request ended; want 0", q, n)
		}
	}
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// writeReport writes soak-report.json to $AGENTMESH_ARTIFACTS (a temporary
// directory when unset).
func (s *soak) writeReport(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := os.Getenv("AGENTMESH_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
		t.Logf("AGENTMESH_ARTIFACTS is not set: the report goes to %s", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	counts := map[string]map[string]int{}
	var reqs []*soakRequest
	for _, r := range s.reqs {
		if counts[r.Kind] == nil {
			counts[r.Kind] = map[string]int{}
		}
		out := "no outcome"
		if len(r.Outcomes) > 0 {
			out = r.Outcomes[0]
		}
		if len(r.Outcomes) > 1 {
			out = "more than one outcome"
		}
		counts[r.Kind][out]++
		if len(r.Outcomes) != 1 || r.Outcomes[0] != "completed" {
			reqs = append(reqs, r)
		}
	}
	report := map[string]any{
		"duration_s": s.d.Seconds(), "age_s": s.age.Seconds(), "processes": s.roles(),
		"outcomes": counts, "refused_at_submit": s.refused,
		"faults": s.faults, "samples": s.samples, "not_completed": reqs,
		"failed": t.Failed(),
	}
	b, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range s.profiles {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("soak-server-heap-%d.pb.gz", i+1)), p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "soak-report.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("soak report: %s", path)
}
