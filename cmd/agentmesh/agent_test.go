package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/observe/metrics/metricstest"
	"github.com/agentmesh/agentmesh/schemas"
)

// agentTestHeartbeat is the heartbeat of agent processes in these tests:
// three of them (1.2s) are above the server's 1s minimum key TTL.
const agentTestHeartbeat = 400 * time.Millisecond

var (
	agentBinOnce sync.Once
	agentBinPath string
	agentBinErr  error
)

// agentBinary builds the agentmesh binary once per test run.
func agentBinary(t testing.TB) string {
	t.Helper()
	agentBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentmesh-agent-test-")
		if err != nil {
			agentBinErr = err
			return
		}
		agentBinPath = filepath.Join(dir, "agentmesh")
		out, err := exec.Command("go", "build", "-o", agentBinPath, ".").CombinedOutput()
		if err != nil {
			agentBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if agentBinErr != nil {
		t.Fatal(agentBinErr)
	}
	return agentBinPath
}

// agentReady is the line `agentmesh agent` prints when an instance is up;
// its group is the instance id.
var agentReady = regexp.MustCompile(`^agent \S+ instance (\S+) ready`)

// agentProc is one `agentmesh agent` process.
type agentProc struct {
	*proctest.Proc
	instance string
}

// startAgentProc runs `agentmesh agent TextAgent` against url until the test
// ends and waits until its instance is ready.
func startAgentProc(t *testing.T, url string, extra ...string) *agentProc {
	t.Helper()
	args := append([]string{"agent", "TextAgent", "--nats", url, "--heartbeat", agentTestHeartbeat.String()}, extra...)
	p := &agentProc{Proc: proctest.Start(t, exec.Command(agentBinary(t), args...), agentReady)}
	p.instance = p.WaitReady(t)[1]
	return p
}

// textTask builds a TextAgent task.
func textTask(t *testing.T, s string, params map[string]any) bus.Event {
	t.Helper()
	ev, err := bus.NewEvent(bus.TypeTaskRequested, "/test", schemas.TaskRequest{
		Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue(s, "test")}, Params: params,
	})
	if err != nil {
		t.Fatal(err)
	}
	ev.DataContentType = bus.ContentTypeJSON
	return ev
}

// collector gathers result events by task id.
type collector struct {
	mu      sync.Mutex
	results map[string][]bus.Event
	changed chan struct{}
}

func collectResults(t *testing.T, nc *nats.Conn) *collector {
	t.Helper()
	c := &collector{results: map[string][]bus.Event{}, changed: make(chan struct{}, 1)}
	sub, err := nc.Subscribe("mesh.result.>", func(m *nats.Msg) {
		ev, err := bus.Decode(m)
		if err != nil {
			return
		}
		c.mu.Lock()
		c.results[ev.Ext(bus.ExtTaskID)] = append(c.results[ev.Ext(bus.ExtTaskID)], ev)
		c.mu.Unlock()
		select {
		case c.changed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return c
}

// wait blocks until every id has a result.
func (c *collector) wait(t *testing.T, ids []string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		missing := 0
		for _, id := range ids {
			if len(c.results[id]) == 0 {
				missing++
			}
		}
		c.mu.Unlock()
		if missing == 0 {
			return
		}
		select {
		case <-c.changed:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%d of %d tasks have no result after %s", missing, len(ids), timeout)
		}
	}
}

// bySource counts results by the instance that produced them.
func (c *collector) bySource() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, evs := range c.results {
		for _, ev := range evs {
			out[ev.Source[strings.LastIndex(ev.Source, "/")+1:]]++
		}
	}
	return out
}

func publishTasks(t *testing.T, ctx context.Context, js jetstream.JetStream, evs []bus.Event) []string {
	t.Helper()
	ids := make([]string, len(evs))
	for i, ev := range evs {
		msg, err := bus.Encode("mesh.task.TextAgent", ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
		ids[i] = ev.ID
	}
	return ids
}

// storedResults counts the result messages in MESH_RESULTS once the stream
// holds at least want of them (or a few seconds passed): a core subscriber
// can see a result before the stream has stored it.
func storedResults(t *testing.T, ctx context.Context, res *bus.Resources, want uint64) uint64 {
	t.Helper()
	var msgs uint64
	fixture.Within(5*time.Second, func() bool {
		info, err := res.Results.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		msgs = info.State.Msgs
		return msgs >= want
	})
	return msgs
}

// waitAckPending polls the TextAgent consumer until n tasks are held by instances.
func waitAckPending(t *testing.T, ctx context.Context, js jetstream.JetStream, n int) {
	t.Helper()
	for {
		cons, err := js.Consumer(ctx, "MESH_TASKS", "TextAgent")
		if err == nil {
			info, err := cons.Info(ctx)
			if err == nil && info.NumAckPending >= n {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("instances never held %d tasks at once", n)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestAgentProcessesShareTasks(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	nc := srv.Conn(t)
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	a := startAgentProc(t, srv.URL())
	b := startAgentProc(t, srv.URL())
	waitTextAgents(t, ctx, res, 2)

	results := collectResults(t, nc)
	evs := make([]bus.Event, 200)
	for i := range evs {
		evs[i] = textTask(t, fmt.Sprintf("task %d", i), map[string]any{"delay_ms": 2})
	}
	ids := publishTasks(t, ctx, js, evs)
	results.wait(t, ids, 60*time.Second)

	counts := results.bySource()
	t.Logf("results by instance: %v", counts)
	if counts[a.instance] == 0 || counts[b.instance] == 0 {
		t.Errorf("both instances should work; results by instance: %v (a=%s b=%s)", counts, a.instance, b.instance)
	}
	if n := storedResults(t, ctx, res, 200); n != 200 {
		t.Errorf("MESH_RESULTS holds %d results for 200 tasks; want exactly one each", n)
	}
	results.mu.Lock()
	defer results.mu.Unlock()
	for i, id := range ids {
		evs := results.results[id]
		var r schemas.AgentResult
		if err := json.Unmarshal(evs[0].Data, &r); err != nil || !r.Success {
			t.Fatalf("task %d: %s", i, evs[0].Data)
		}
		if got, _ := r.Outputs["text"].Text(); got != strings.ToUpper(fmt.Sprintf("task %d", i)) {
			t.Fatalf("task %d output %q", i, got)
		}
	}
}

func TestAgentProcessKilledLosesNoTask(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	nc := srv.Conn(t)
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	flags := []string{"--ack-wait", "2s", "--concurrency", "4"}
	victim := startAgentProc(t, srv.URL(), flags...)
	survivor := startAgentProc(t, srv.URL(), flags...)
	reg := waitTextAgents(t, ctx, res, 2)

	results := collectResults(t, nc)
	evs := make([]bus.Event, 16)
	for i := range evs {
		evs[i] = textTask(t, fmt.Sprintf("slow %d", i), map[string]any{"delay_ms": 1500})
	}
	ids := publishTasks(t, ctx, js, evs)
	waitAckPending(t, ctx, js, 8) // both instances hold four tasks each

	if err := victim.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for {
		ch := reg.Changes()
		info, _ := reg.Lookup("TextAgent")
		if len(info.Instances) == 1 && info.Instances[0].ID == survivor.instance {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatal("the killed instance never left the registry")
		}
	}
	gone := time.Since(killed)
	t.Logf("killed instance left the registry %s after SIGKILL (3 heartbeats = %s)", gone.Round(time.Millisecond), 3*agentTestHeartbeat)
	if gone > 3*agentTestHeartbeat+500*time.Millisecond {
		t.Errorf("killed instance stayed %s; want within 3 heartbeats (%s)", gone, 3*agentTestHeartbeat)
	}

	results.wait(t, ids, 60*time.Second)
	if n := storedResults(t, ctx, res, uint64(len(ids))); n != uint64(len(ids)) {
		t.Errorf("MESH_RESULTS holds %d results for %d tasks; want exactly one each", n, len(ids))
	}
	counts := results.bySource()
	t.Logf("results by instance: %v", counts)
	if counts[victim.instance] != 0 {
		t.Errorf("the killed instance produced %d results; it was killed mid-task", counts[victim.instance])
	}
}

func TestAgentProcessDrainsOnSIGTERM(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	nc := srv.Conn(t)
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	p := startAgentProc(t, srv.URL(), "--concurrency", "4", "--instance", "drainer", "--metrics-addr", "127.0.0.1:0")
	departures, err := nc.SubscribeSync("mesh.registry.depart.TextAgent")
	if err != nil {
		t.Fatal(err)
	}
	results := collectResults(t, nc)
	evs := make([]bus.Event, 4)
	for i := range evs {
		evs[i] = textTask(t, fmt.Sprintf("drain %d", i), map[string]any{"delay_ms": 1000, "op": "reverse"})
	}
	ids := publishTasks(t, ctx, js, evs)
	waitAckPending(t, ctx, js, 4)
	// Delivered is not yet running: a task still prefetched when the drain
	// starts is handed back to the stream for another instance. Wait until
	// the four are taken (tasks_in_flight).
	m := regexp.MustCompile(`metrics on http://(\S+)/metrics`).FindStringSubmatch(p.Stderr.String())
	if m == nil {
		t.Fatalf("the agent did not say where its metrics are:\n%s", p.Stderr)
	}
	if f := pollMetrics(t, m[1], func(f metricstest.Families) bool {
		return f.Value("agentmesh_tasks_in_flight", "agent", "TextAgent") == 4
	}); f.Value("agentmesh_tasks_in_flight", "agent", "TextAgent") != 4 {
		t.Fatalf("tasks in flight: %v; want 4", f.Value("agentmesh_tasks_in_flight", "agent", "TextAgent"))
	}

	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-ctx.Done():
		t.Fatal("agent did not exit after SIGTERM")
	}
	if p.Err() != nil {
		t.Fatalf("exit after SIGTERM: %v; want status 0\n%s", p.Err(), p.Stderr)
	}
	results.wait(t, ids, 5*time.Second)
	if counts := results.bySource(); counts["drainer"] != 4 {
		t.Errorf("results by instance %v; want the 4 in-flight tasks finished by the draining instance", counts)
	}
	msg, err := departures.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no departure event: %v", err)
	}
	var dep schemas.Departure
	if ev, err := bus.Decode(msg); err != nil || ev.Type != bus.TypeAgentDeparted || json.Unmarshal(ev.Data, &dep) != nil || dep.Instance != "drainer" {
		t.Errorf("departure = %+v (%v)", dep, err)
	}
	if _, err := res.Agents.Get(ctx, "TextAgent.drainer"); err == nil {
		t.Error("registry key still there after drain")
	}
}

func TestAgentCLICommands(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	bin := agentBinary(t)
	run := func(args ...string) (string, string, int) {
		return runBinary(t, exec.Command(bin, append(args, "--nats", srv.URL())...))
	}

	if out, _, code := run("agents"); code != 0 || !strings.Contains(out, "no live agents") {
		t.Errorf("agents with none live: %d %q", code, out)
	}
	_, errOut, code := run("agent", "NoSuchAgent")
	if code != 2 || !strings.Contains(errOut, `"NoSuchAgent"`) || !strings.Contains(errOut, "TextAgent") {
		t.Errorf("unknown agent: exit %d, stderr %q; want 2 naming it and listing TextAgent", code, errOut)
	}

	startAgentProc(t, srv.URL(), "--instance", "cli1")
	out, _, code := run("agents")
	if code != 0 || !strings.Contains(out, "TextAgent") || !strings.Contains(out, "TRANSFORMATION") || !strings.Contains(out, "text:TEXT* → text:TEXT") {
		t.Errorf("agents: exit %d\n%s", code, out)
	}
	out, _, _ = run("agents", "--json")
	var list []client.AgentInfo
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 || len(list[0].Instances) != 1 || list[0].Instances[0].ID != "cli1" {
		t.Errorf("agents --json = %s (%v)", out, err)
	}

	out, errOut, code = run("task", "TextAgent", "--text", "text=hello agent mesh", "--param", "op=title")
	if code != 0 || !strings.Contains(out, `"Hello Agent Mesh"`) || !strings.Contains(out, "TextAgent completed") {
		t.Errorf("task: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = run("task", "TextAgent", "--input", "text=count these words", "--param", "op=wordcount", "--json")
	var r schemas.AgentResult
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || !r.Success {
		t.Errorf("task --json: exit %d %s", code, out)
	} else if got, _ := r.Outputs["text"].Text(); got != "3" {
		t.Errorf("wordcount = %q", got)
	}
	_, errOut, code = run("task", "TextAgent", "--text", "text=x", "--param", "op=shout")
	if code != 1 || !strings.Contains(errOut, "invalid_params") || !strings.Contains(errOut, "shout") {
		t.Errorf("failing task: exit %d, stderr %q; want 1 with the error", code, errOut)
	}
}

// waitTextAgents returns a registry view once n TextAgent instances are live;
// the view is stopped when the test ends.
func waitTextAgents(t *testing.T, ctx context.Context, res *bus.Resources, n int) *client.Registry {
	t.Helper()
	reg, err := client.NewRegistry(ctx, res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	if err := reg.Wait(ctx, "TextAgent", n); err != nil {
		t.Fatal(err)
	}
	return reg
}

// runBinary runs cmd to its end and returns its stdout, its stderr and its
// exit status.
func runBinary(t *testing.T, cmd *exec.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}
