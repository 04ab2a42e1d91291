package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

const schedulePipeline = `name: reverse
steps:
  - {id: reverse, agent: TextAgent, params: {op: reverse}, inputs: {text: "text:hello scheduled world"}}
`

// scheduleMesh is an embedded server with a TextAgent process, the
// pipeline file, and a way to start orchestrator processes and run the
// CLI.
type scheduleMesh struct {
	srv   *bustest.Server
	res   *bus.Resources
	bin   string
	file  string
	store *state.Store
}

func newScheduleMesh(t *testing.T) *scheduleMesh {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	m := &scheduleMesh{srv: srv, res: res, bin: agentBinary(t), file: filepath.Join(t.TempDir(), "reverse.yaml"),
		store: state.New(res.Conversations, res.Runs)}
	writeFile(t, m.file, []byte(schedulePipeline))
	startAgentProc(t, srv.URL())
	return m
}

func (m *scheduleMesh) orchestrator(t *testing.T) *proctest.Proc {
	cmd := exec.Command(m.bin, "--nats", m.srv.URL(), "orchestrator")
	cmd.Env = append(cleanEnv(), "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	p := proctest.Start(t, cmd, regexp.MustCompile(`orchestrator ready`))
	p.WaitReady(t)
	return p
}

func (m *scheduleMesh) cli(t *testing.T, args ...string) (string, string, int) {
	cmd := exec.Command(m.bin, append([]string{"--nats", m.srv.URL()}, args...)...)
	cmd.Env = cleanEnv()
	return runBinary(t, cmd)
}

// runs returns the runs whose id starts with prefix.
func (m *scheduleMesh) runs(t *testing.T, prefix string) []state.RunSummary {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, _, err := m.store.RecentRuns(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []state.RunSummary
	for _, r := range all {
		if strings.HasPrefix(r.ID, prefix) {
			out = append(out, r)
		}
	}
	return out
}

func (m *scheduleMesh) completed(t *testing.T, prefix string) int {
	n := 0
	for _, r := range m.runs(t, prefix) {
		if r.Status == string(schemas.RunCompleted) {
			n++
		}
	}
	return n
}

// subjectCount is how many messages MESH_SCHEDULES holds on subject.
func (m *scheduleMesh) subjectCount(t *testing.T, subject string) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := m.res.Schedules.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}

// TestScheduleFiresOnceAfterEveryReplicaRestarted: a schedule added with
// `agentmesh schedule add --at`, then both orchestrator replicas (separate
// processes) killed; the server fires it with no replica running; a
// replica started after the fire time runs it, once.
func TestScheduleFiresOnceAfterEveryReplicaRestarted(t *testing.T) {
	m := newScheduleMesh(t)
	names := m.srv.Names()
	replicas := []*proctest.Proc{m.orchestrator(t), m.orchestrator(t)}

	at := time.Now().Add(8 * time.Second).UTC().Truncate(time.Second)
	out, errOut, code := m.cli(t, "schedule", "add", m.file, "--name", "once", "--at", at.Format(time.RFC3339))
	if code != 0 || !strings.Contains(out, `schedule once added: pipeline "reverse" at `) {
		t.Fatalf("schedule add: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, p := range replicas {
		if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.Exited()
	}
	if n := m.subjectCount(t, names.ScheduleTick("once")); n != 0 || time.Now().After(at) {
		t.Fatalf("the schedule fired (%d ticks) before the replicas were killed: the test proves nothing on a machine this slow", n)
	}
	// The server fires the schedule with no replica running: the tick waits
	// in the stream, and the one-time schedule is gone.
	fixture.EventuallyWithin(t, 30*time.Second, "the schedule's tick in MESH_SCHEDULES", func() bool {
		return m.subjectCount(t, names.ScheduleTick("once")) == 1
	})
	if n := m.subjectCount(t, names.Schedule("once")); n != 0 {
		t.Errorf("the @at schedule is still stored after it fired (%d messages)", n)
	}
	if got := m.runs(t, "once-"); len(got) != 0 {
		t.Fatalf("runs before any replica was back: %+v", got)
	}

	m.orchestrator(t)
	fixture.EventuallyWithin(t, 30*time.Second, "the scheduled run completed", func() bool { return m.completed(t, "once-") == 1 })
	fixture.Eventually(t, "the tick acknowledged", func() bool { return m.subjectCount(t, names.ScheduleTick("once")) == 0 })
	runs := m.runs(t, "once-")
	if len(runs) != 1 {
		t.Fatalf("the schedule started %d runs, want 1: %+v", len(runs), runs)
	}
	if want := regexp.MustCompile(`^once-` + at.Format("20060102T1504") + `\d\dZ-\d+$`); !want.MatchString(runs[0].ID) {
		t.Errorf("run id %q; want once-<tick time>-<sequence> near %s", runs[0].ID, at.Format(time.RFC3339))
	}
	if runs[0].Name != "reverse" || runs[0].Completed != 1 {
		t.Errorf("the scheduled run: %+v; want pipeline reverse, its one step completed", runs[0])
	}
	out, _, _ = m.cli(t, "schedule", "ls")
	if !strings.Contains(out, "no schedules") {
		t.Errorf("schedule ls after the one-time schedule fired: %q; want none", out)
	}
}

// TestScheduleEveryFiresUntilRemoved: an @every 1s schedule starts run
// after run; once `agentmesh schedule rm` removed it, it starts no more,
// while a second schedule keeps firing (the clock the test reads).
func TestScheduleEveryFiresUntilRemoved(t *testing.T) {
	m := newScheduleMesh(t)
	m.orchestrator(t)

	out, errOut, code := m.cli(t, "schedule", "add", m.file, "--name", "tick", "--every", "1s")
	if code != 0 {
		t.Fatalf("schedule add: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	fixture.EventuallyWithin(t, 30*time.Second, "three runs of the every-1s schedule", func() bool { return m.completed(t, "tick-") >= 3 })

	out, errOut, code = m.cli(t, "--json", "schedule", "ls")
	var list []client.ScheduleInfo
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 ||
		list[0].Name != "tick" || list[0].Pipeline != "reverse" || list[0].Schedule.Every != "1s" || list[0].Pattern != "@every 1s" {
		t.Fatalf("schedule ls --json: exit %d, %s (stderr %s)", code, out, errOut)
	}
	_, errOut, code = m.cli(t, "schedule", "add", m.file, "--name", "tick", "--every", "2s")
	if code != 1 || !strings.Contains(errOut, `schedule exists: "tick": remove it first`) {
		t.Errorf("adding a name in use: exit %d, stderr %q; want 1 and the name in use", code, errOut)
	}

	out, errOut, code = m.cli(t, "schedule", "rm", "tick")
	if code != 0 || !strings.Contains(out, "removed schedule tick") {
		t.Fatalf("schedule rm: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	// A tick fired as rm ran may still start a run: count from when a
	// second schedule has fired twice, and again after it fired twice more.
	if _, errOut, code := m.cli(t, "schedule", "add", m.file, "--name", "probe", "--every", "1s"); code != 0 {
		t.Fatalf("schedule add probe: exit %d: %s", code, errOut)
	}
	fixture.EventuallyWithin(t, 30*time.Second, "two runs of the probe", func() bool { return len(m.runs(t, "probe-")) >= 2 })
	before := len(m.runs(t, "tick-"))
	fixture.EventuallyWithin(t, 30*time.Second, "four runs of the probe", func() bool { return len(m.runs(t, "probe-")) >= 4 })
	if after := len(m.runs(t, "tick-")); after != before {
		t.Errorf("the removed schedule started %d more runs while the probe fired twice", after-before)
	}

	// --replace replaces a schedule in place (a roll-up on its subject).
	if _, errOut, code := m.cli(t, "schedule", "add", m.file, "--name", "probe", "--every", "1h", "--replace"); code != 0 {
		t.Fatalf("schedule add --replace: exit %d: %s", code, errOut)
	}
	out, _, _ = m.cli(t, "--json", "schedule", "ls")
	list = nil
	if json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Name != "probe" || list[0].Pattern != "@every 1h0m0s" {
		t.Errorf("schedule ls after --replace: %s", out)
	}
	if n := m.subjectCount(t, m.srv.Names().Schedule("probe")); n != 1 {
		t.Errorf("%d messages hold schedule probe after --replace, want 1", n)
	}

	_, errOut, code = m.cli(t, "schedule", "rm", "nope")
	if code != 1 || !strings.Contains(errOut, `no such schedule: "nope": agentmesh schedule ls lists them`) {
		t.Errorf("rm of an unknown schedule: exit %d, stderr %q", code, errOut)
	}
}

// TestScheduleAddUsage: bad schedules are usage errors (exit 2) naming the
// bad value, refused before the mesh is reached.
func TestScheduleAddUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.yaml")
	writeFile(t, file, []byte(schedulePipeline))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--every", "10ms"}, `every "10ms" is shorter than the least interval, 1s`},
		{[]string{"--every", "soon"}, `every "soon" is not a duration`},
		{[]string{"--at", "tomorrow"}, `at "tomorrow" is not an RFC 3339 time`},
		{[]string{"--cron", "0 0 25 * * *"}, `hour "25": 25 is outside 0 to 23`},
		{[]string{"--cron", "* * * *"}, `cron "* * * *": has 4 fields, a cron schedule has 6`},
		{[]string{"--every", "1m", "--at", "2030-01-01T00:00:00Z"}, "give one of --cron, --every and --at, not 2"},
		{[]string{"--every", "1m", "--name", "a.b"}, `schedule name "a.b"`},
	} {
		var out, errOut strings.Builder
		code := run(append([]string{"--nats", "nats://127.0.0.1:1", "schedule", "add", file}, tc.args...), &out, &errOut)
		if code != exitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("schedule add %v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut.String(), exitUsage, tc.want)
		}
	}
	// A file whose schedule: is bad is refused naming it.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writeFile(t, bad, []byte(schedulePipeline+"schedule: {every: 1m, cron: \"@daily\"}\n"))
	var out, errOut strings.Builder
	if code := run([]string{"--nats", "nats://127.0.0.1:1", "schedule", "add", bad}, &out, &errOut); code != exitFailure ||
		!strings.Contains(errOut.String(), "give exactly one of cron, every and at (2 given)") {
		t.Errorf("a file with two schedules: exit %d, stderr %q", code, errOut.String())
	}
	_ = os.Remove(bad)
}

// TestGatewayHookFlag: --hook needs NAME=FILE and the hook's secret in
// its variable; the errors say which.
func TestGatewayHookFlag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.yaml")
	writeFile(t, file, []byte(schedulePipeline))
	env := map[string]string{"AGENTMESH_HOOK_SECRET_ON_PUSH": "0123456789abcdef0123"}
	getenv := func(k string) string { return env[k] }
	if opts, err := hookOptions([]string{"on-push=" + file}, getenv); err != nil || len(opts) != 1 {
		t.Fatalf("a good hook: %v", err)
	}
	for _, tc := range []struct{ flag, want string }{
		{"on-push", `--hook "on-push": give NAME=FILE`},
		{"deploy=" + file, "--hook deploy: no secret: set AGENTMESH_HOOK_SECRET_DEPLOY"},
		{"a.b=" + file, `hook name "a.b"`},
		{"on-push=/nonexistent.yaml", "--hook on-push: "},
	} {
		_, err := hookOptions([]string{tc.flag}, getenv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--hook %s: %v; want %q", tc.flag, err, tc.want)
		}
	}
}
