package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/observe/metrics/metricstest"
)

// freeAddr returns 127.0.0.1:PORT with a port that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitReady polls http://addr/readyz until it answers 200.
func waitReady(t *testing.T, addr string, logs fmt.Stringer) {
	t.Helper()
	waitHTTP(t, "http://"+addr+"/readyz", logs)
}

// waitHTTP polls url until it answers 200, failing the test with logs
// after 30s.
func waitHTTP(t *testing.T, url string, logs fmt.Stringer) {
	t.Helper()
	var err error
	ok := fixture.Within(30*time.Second, func() bool {
		var resp *http.Response
		resp, err = http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !ok {
		t.Fatalf("%s not 200 after 30s (last: %v)\n%s", url, err, logs)
	}
}

// metricsModel is the model the orchestrator of TestMetricsOfProcesses
// calls, priced at $1000 a million prompt tokens and $2000 a million
// completion tokens.
const metricsModel = "metrics-model"

// startMetricsProcesses starts a TextAgent process and an orchestrator
// process, each serving metrics, against an embedded server; the
// orchestrator's model is llmtest answering a turn with one TextAgent call.
// It returns the server and the two metrics addresses once both are ready.
func startMetricsProcesses(t *testing.T, ctx context.Context) (srv *bustest.Server, agentAddr, orchAddr string, orchErr fmt.Stringer) {
	t.Helper()
	srv = bustest.Start(t)
	res := srv.Provision(t)
	model := llmtest.New(t,
		llmtest.Calls(llmtest.Call("TextAgent", map[string]any{"text": "hello there", "op": "upper"})),
		llmtest.Answer("It says HELLO THERE."))
	agentAddr, orchAddr, orchErr = startMetricsPair(t, srv.URL(), []string{"OPENAI_BASE_URL=" + model.URL(), "OPENAI_API_KEY=test-key", "AGENTMESH_MODEL=" + metricsModel,
		`AGENTMESH_PRICES={"` + metricsModel + `": {"prompt": 1000, "completion": 2000}}`,
		"AGENTMESH_POLICY_REFUSE_TOOLS=DeleteAgent"}) // a policy the workload passes, whose decisions are counted
	waitTextAgents(t, ctx, res, 1)
	return srv, agentAddr, orchAddr, orchErr
}

// metricsWorkload sends 6 TextAgent tasks that complete and 3 refused for
// an op TextAgent lacks, runs a pipeline of 3 TextAgent steps, and a chat
// turn of 2 model calls and 1 TextAgent task.
func metricsWorkload(t *testing.T, ctx context.Context, srv *bustest.Server, orchErr fmt.Stringer) {
	t.Helper()
	results := collectResults(t, srv.Conn(t))
	var evs []bus.Event
	for i := range 6 {
		evs = append(evs, textTask(t, fmt.Sprintf("task %d", i), map[string]any{"op": "upper"}))
	}
	for range 3 {
		evs = append(evs, textTask(t, "x", map[string]any{"op": "shout"}))
	}
	results.wait(t, publishTasks(t, ctx, srv.JetStream(t), evs), 30*time.Second)

	file := pipelineFile(t, "three.yaml", `name: three
steps:
  - {id: upper, agent: TextAgent, params: {op: upper}, inputs: {text: "text:one two three"}}
  - {id: lower, agent: TextAgent, depends_on: [upper], params: {op: lower}}
  - {id: count, agent: TextAgent, depends_on: [lower], params: {op: wordcount}}
`)
	var out, errOut bytes.Buffer
	if code := run([]string{"--nats", srv.URL(), "run", file}, &out, &errOut); code != 0 {
		t.Fatalf("run: exit %d\n%s%s\norchestrator:\n%s", code, &out, &errOut, orchErr)
	}
	if code := run([]string{"--nats", srv.URL(), "chat", "--timeout", "30s", "shout hello there"}, &out, &errOut); code != 0 {
		t.Fatalf("chat: exit %d\n%s%s\norchestrator:\n%s", code, &out, &errOut, orchErr)
	}
}

// The agent and orchestrator processes count what they did: after a known
// workload (direct tasks, some failing; a pipeline; a chat turn whose model
// calls have known tokens and a known price), their /metrics, read with the
// Prometheus text parser, show exactly that work.
func TestMetricsOfProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv, agentAddr, orchAddr, orchErr := startMetricsProcesses(t, ctx)
	metricsWorkload(t, ctx, srv, orchErr)
	const model = metricsModel

	// The agent ends a task after it published the result: poll until the
	// last one is counted, then check every figure.
	const completed, failed = 6 + 3 + 1, 3
	agentFams := pollMetrics(t, agentAddr, func(f metricstest.Families) bool {
		return f.Value("agentmesh_tasks_total", "agent", "TextAgent") >= completed+failed
	})
	orchFams := pollMetrics(t, orchAddr, func(f metricstest.Families) bool {
		return f.Value("agentmesh_chat_turns_total") >= 1 && f.Value("agentmesh_pipeline_runs_total") >= 1
	})
	for _, c := range []struct {
		fams   metricstest.Families
		name   string
		labels []string
		want   float64
	}{
		{agentFams, "agentmesh_tasks_total", []string{"agent", "TextAgent", "outcome", "completed"}, completed},
		{agentFams, "agentmesh_tasks_total", []string{"agent", "TextAgent", "outcome", "failed"}, failed},
		{agentFams, "agentmesh_tasks_total", nil, completed + failed},
		{agentFams, "agentmesh_task_duration_seconds", []string{"agent", "TextAgent"}, completed + failed},
		{agentFams, "agentmesh_tasks_in_flight", []string{"agent", "TextAgent"}, 0},
		{agentFams, "agentmesh_task_redeliveries_total", nil, 0},
		{agentFams, "agentmesh_dead_letters_total", nil, 0},
		{orchFams, "agentmesh_pipeline_runs_total", []string{"outcome", "completed"}, 1},
		{orchFams, "agentmesh_pipeline_runs_total", nil, 1},
		{orchFams, "agentmesh_pipeline_steps_total", []string{"agent", "TextAgent", "outcome", "completed"}, 3},
		{orchFams, "agentmesh_pipeline_steps_total", nil, 3},
		{orchFams, "agentmesh_chat_turns_total", []string{"outcome", "completed"}, 1},
		{orchFams, "agentmesh_chat_turn_duration_seconds", nil, 1},
		{orchFams, "agentmesh_llm_calls_total", []string{"model", model, "outcome", "ok"}, 2},
		{orchFams, "agentmesh_llm_tokens_total", []string{"model", model, "kind", "prompt"}, 200},
		{orchFams, "agentmesh_llm_tokens_total", []string{"model", model, "kind", "completion"}, 40},
		{orchFams, "agentmesh_agents_live", []string{"agent", "TextAgent"}, 1},
		{orchFams, "agentmesh_consumer_pending", []string{"agent", "TextAgent"}, 0},
		// The chat's policy allowed both model calls, both answers and the
		// TextAgent call.
		{orchFams, "agentmesh_policy_decisions_total", []string{"policy", "refuse-tools", "target", "request", "action", "allow"}, 2},
		{orchFams, "agentmesh_policy_decisions_total", []string{"policy", "refuse-tools", "target", "response", "action", "allow"}, 2},
		{orchFams, "agentmesh_policy_decisions_total", []string{"policy", "refuse-tools", "target", "tool", "action", "allow"}, 1},
		{orchFams, "agentmesh_policy_decisions_total", nil, 5},
	} {
		if got := c.fams.Value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v\n%s", c.name, c.labels, got, c.want, c.fams.Series(c.name))
		}
	}
	// 200 prompt tokens at $1000 and 40 completion tokens at $2000 a million.
	if got := orchFams.Value("agentmesh_llm_cost_usd_total", "model", model); math.Abs(got-0.28) > 1e-9 {
		t.Errorf("llm cost = %v, want 0.28\n%s", got, orchFams.Series("agentmesh_llm_cost_usd_total"))
	}
	// Each process reports what it saw: the agent no turns, the
	// orchestrator no tasks of its own.
	if n := agentFams.Value("agentmesh_chat_turns_total"); n != 0 {
		t.Errorf("agent counted %v chat turns", n)
	}
	if _, ok := orchFams["agentmesh_tasks_total"]; ok {
		t.Errorf("orchestrator reports tasks:\n%s", orchFams.Series("agentmesh_tasks_total"))
	}
	for _, addr := range []string{agentAddr, orchAddr} {
		if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != 200 {
			t.Errorf("%s/healthz: %v %v", addr, resp, err)
		} else {
			resp.Body.Close()
		}
	}
}

// pollMetrics scrapes http://addr/metrics until done holds (or 10s pass)
// and returns the last scrape.
func pollMetrics(t *testing.T, addr string, done func(metricstest.Families) bool) metricstest.Families {
	t.Helper()
	var f metricstest.Families
	fixture.Within(10*time.Second, func() bool {
		f = metricstest.Scrape(t, "http://"+addr+"/metrics")
		return done(f)
	})
	return f
}

// Bad metrics flags are refused before anything starts, naming the value.
func TestMetricsFlagsRefused(t *testing.T) {
	bin := agentBinary(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "TextAgent", "--metrics-addr", "9464"}, `"9464"`},
		{[]string{"orchestrator", "--metrics-addr", "localhost:http-ish"}, `"localhost:http-ish"`},
		{[]string{"orchestrator", "--pprof"}, "--metrics-addr"},
		{[]string{"server", "--port", "0", "--nats-http-port", "-5", "--store", t.TempDir()}, "-5"},
		{[]string{"up", "--nats", "nats://127.0.0.1:1", "--nats-http-port", "8222"}, "--nats-http-port 8222"},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Env = withoutEnv(os.Environ(), envMetricsAddr)
		_, errOut, code := runBinary(t, cmd)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error naming %s", c.args, code, errOut, c.want)
		}
	}
}

var natsMonitor = regexp.MustCompile(`NATS monitoring on (http://\S+) `)

// up serves its own endpoint, gives each child one and lists them; the
// orchestrator's reports every agent up started; the embedded server
// serves its own monitoring endpoint for the NATS exporters.
func TestUpMetrics(t *testing.T) {
	bin := agentBinary(t)
	up := startUp(t, bin, "--metrics-addr", "127.0.0.1:0", "--nats-http-port", "-1")
	out := up.output()
	if !strings.Contains(out, "PROCESS") || !strings.Contains(out, "METRICS") {
		t.Errorf("status table has no METRICS column:\n%s", out)
	}
	if len(up.metrics) != len(builtinNames())+1 {
		t.Fatalf("status table lists %d metrics addresses, want one per child (%d):\n%s", len(up.metrics), len(builtinNames())+1, out)
	}
	seen := map[string]bool{}
	for name, u := range up.metrics {
		if seen[u] {
			t.Errorf("%s shares its metrics address %s", name, u)
		}
		seen[u] = true
		waitReady(t, strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/metrics"), stringer(up.output))
	}
	orch := pollMetrics(t, strings.TrimSuffix(strings.TrimPrefix(up.metrics["orchestrator"], "http://"), "/metrics"),
		func(f metricstest.Families) bool {
			return len(f["agentmesh_agents_live"].GetMetric()) == len(builtinNames())
		})
	for _, name := range builtinNames() {
		if n := orch.Value("agentmesh_agents_live", "agent", name); n != 1 {
			t.Errorf("agents live %s = %v, want 1", name, n)
		}
	}
	m := natsMonitor.FindStringSubmatch(up.output())
	if m == nil {
		t.Fatalf("up does not say where NATS monitoring is:\n%s", up.output())
	}
	resp, err := http.Get(m[1] + "/healthz?js-enabled-only=true")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("NATS monitoring %s/healthz: %v %v", m[1], resp, err)
	}
	resp.Body.Close()
	_ = up.cmd.Process.Signal(os.Interrupt)
	if err := up.wait(30 * time.Second); err != nil {
		t.Errorf("up exit: %v\n%s", err, up.output())
	}
}

type stringer func() string

func (s stringer) String() string { return s() }

// up's children take the ports after up's own, in the order they start.
func TestChildMetricsAddrs(t *testing.T) {
	got, err := childMetricsAddrs("127.0.0.1:9464", 3)
	if err != nil || strings.Join(got, " ") != "127.0.0.1:9465 127.0.0.1:9466 127.0.0.1:9467" {
		t.Errorf("childMetricsAddrs = %v, %v", got, err)
	}
	if got, err := childMetricsAddrs(":9464", 1); err != nil || got[0] != ":9465" {
		t.Errorf("every interface: %v, %v", got, err)
	}
	if _, err := childMetricsAddrs("127.0.0.1:65530", 8); err == nil || !strings.Contains(err.Error(), "65535") {
		t.Errorf("past the last port: err = %v", err)
	}
	free, err := childMetricsAddrs("127.0.0.1:0", 2)
	if err != nil || free[0] == free[1] || strings.HasSuffix(free[0], ":0") {
		t.Errorf("port 0: %v, %v; want two distinct free ports", free, err)
	}
}
