package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// pipelineMesh starts an embedded server with an in-process orchestrator
// and TextAgent, and returns the server's URL.
func pipelineMesh(t *testing.T) string {
	t.Helper()
	mesh := meshtest.New(t)
	srv := mesh.Srv
	textMesh{agentOpts: []agents.Option{agents.WithHeartbeat(time.Second)}}.start(t, mesh)
	return srv.URL()
}

func pipelineFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const shoutPipeline = `name: shout
steps:
  - id: upper
    agent: TextAgent
    params: {op: upper}
    inputs: {text: "text:hello from the cli"}
  - id: count
    agent: TextAgent
    depends_on: [upper]
    params: {op: wordcount}
`

func TestRunStateShowAndWatch(t *testing.T) {
	url := pipelineMesh(t)
	file := pipelineFile(t, "shout.yaml", shoutPipeline)

	// run: per-step progress to the end, exit 0.
	var out, errOut bytes.Buffer
	if code := run([]string{"--nats", url, "run", file, "--run-id", "cli-run"}, &out, &errOut); code != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", code, &out, &errOut)
	}
	for _, want := range []string{
		`run cli-run: submitted "shout" (2 steps)`,
		"wave 1  upper        TextAgent            running",
		"wave 1  upper        TextAgent            completed",
		"upper of 18 characters [text TEXT]",
		"wave 2  count        TextAgent            completed",
		"counted 4 words",
		"run cli-run completed: 2 completed, 0 failed, 0 skipped",
		"  totals: 0 prompt + 0 completion tokens · $0.0000 · model 0s · agents ", // TextAgent calls no model
		// what the steps produced, whole
		`text (TEXT): "HELLO FROM THE CLI" · from TextAgent`,
		`text (TEXT): "4" · from TextAgent`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("run output misses %q:\n%s", want, &out)
		}
	}
	if errOut.Len() != 0 {
		t.Errorf("run wrote to stderr: %s", &errOut)
	}

	// state show: readable.
	out.Reset()
	if code := run([]string{"--nats", url, "state", "show", "cli-run"}, &out, &errOut); code != 0 {
		t.Fatalf("state show: exit %d: %s", code, &errOut)
	}
	for _, want := range []string{
		`run cli-run  "shout"  completed`,
		"steps:",
		"wave 1  upper        TextAgent            completed",
		"wave 2  count        TextAgent            completed",
		"slots:",
		"current_text             TEXT                         from TextAgent",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("state show misses %q:\n%s", want, &out)
		}
	}

	// state show --json: the assembled run.
	out.Reset()
	if code := run([]string{"--nats", url, "--json", "state", "show", "cli-run"}, &out, &errOut); code != 0 {
		t.Fatalf("state show --json: exit %d: %s", code, &errOut)
	}
	var rs state.RunState
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		t.Fatalf("state show --json is not a run: %v\n%s", err, &out)
	}
	count, err := rs.Steps["count"].Outputs["text"].Text()
	if rs.Status != schemas.RunCompleted || err != nil || count != "4" {
		t.Errorf("run %s, count output %q (%v); want completed and 4", rs.Status, count, err)
	}
	if slot, _ := rs.State.Slots[route.SlotText].Text(); slot != "4" {
		t.Errorf("slot %s = %q, want 4", route.SlotText, slot)
	}

	// state show of nothing: exit 1, one line.
	out.Reset()
	errOut.Reset()
	if code := run([]string{"--nats", url, "state", "show", "no-such-run"}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), `no run or conversation "no-such-run"`) {
		t.Errorf("state show of a missing id: exit %d, stderr %q", code, &errOut)
	}

	// watch: a separate process prints the run's events from the start and
	// ends with the run, exit 0.
	cmd := exec.Command(agentBinary(t), "watch", "cli-run", "--nats", url)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var watchErr bytes.Buffer
	cmd.Stderr = &watchErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var seen []string
	deadline := time.After(20 * time.Second)
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("watch exited early: %v\n%s", cmd.Wait(), &watchErr)
			}
			seen = append(seen, l)
			done = strings.Contains(l, "run cli-run completed")
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("watch did not print the run's end; it printed:\n%s", strings.Join(seen, "\n"))
		}
	}
	for range lines { // the lines printed after the end, until watch exits
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("watch of a completed run ended with %v, want exit 0\n%s", err, &watchErr)
	}
	all := strings.Join(seen, "\n")
	for _, want := range []string{"upper        TextAgent            running", "upper        TextAgent            completed", "count        TextAgent            completed"} {
		if !strings.Contains(all, want) {
			t.Errorf("watch output misses %q:\n%s", want, all)
		}
	}
}

func TestRunInvalidPipelineExitsOneWithOneLine(t *testing.T) {
	url := pipelineMesh(t)
	cases := []struct {
		name, file, want string
	}{
		// Rejected by the orchestrator, which knows the live agents.
		{"unknown agent", "steps:\n  - id: a\n    agent: Ghost\n", `unknown agent "Ghost"`},
		{"literal of the wrong type", "steps:\n  - id: a\n    agent: TextAgent\n    inputs: {text: seed.images}\n", `input "text" is TEXT but seed.images holds FILE_IDS`},
		// Rejected before anything is sent.
		{"misspelt field", "steps:\n  - id: a\n    agent: TextAgent\n    depends: [b]\n", "field depends not found"},
		{"duplicate step", "steps:\n  - id: a\n    agent: TextAgent\n  - id: a\n    agent: TextAgent\n", `duplicate step id "a"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run([]string{"--nats", url, "run", pipelineFile(t, "p.yaml", c.file)}, &out, &errOut)
			msg := strings.TrimRight(errOut.String(), "\n")
			if code != 1 || strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 1 and one line saying %q", code, msg, c.want)
			}
		})
	}
}

// run --json writes JSON Lines: one event per line, a completed step's
// outputs under "views"; the last line is the run's end.
func TestRunJSONLines(t *testing.T) {
	url := pipelineMesh(t)
	file := pipelineFile(t, "shout.yaml", shoutPipeline)
	var out, errOut bytes.Buffer
	if code := run([]string{"--nats", url, "--json", "run", file, "--run-id", "jsonl-run"}, &out, &errOut); code != 0 {
		t.Fatalf("run --json: exit %d\n%s\n%s", code, &out, &errOut)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	type line struct {
		Type  string            `json:"type"`
		RunID string            `json:"runid"`
		Data  schemas.StepEvent `json:"data"`
		Views []valueView       `json:"views"`
	}
	texts := map[string]string{}
	var last line
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &last); err != nil {
			t.Fatalf("line %d is not one JSON event: %v\n%s", i+1, err, l)
		}
		if last.RunID != "jsonl-run" {
			t.Errorf("line %d: runid %q", i+1, last.RunID)
		}
		if last.Type == "io.agentmesh.pipeline.step.completed" {
			if len(last.Views) != 1 || last.Views[0].DataType != schemas.TypeText {
				t.Fatalf("step %s: views %+v", last.Data.Step, last.Views)
			}
			texts[last.Data.Step] = last.Views[0].Text
		}
	}
	if last.Type != "io.agentmesh.pipeline.completed" {
		t.Errorf("last line is %s, want the run's end", last.Type)
	}
	if texts["upper"] != "HELLO FROM THE CLI" || texts["count"] != "4" {
		t.Errorf("outputs in the JSON lines: %v", texts)
	}
}

// A seed value of any data type reaches a step through "seed.<name>"; a
// seed value that fails its type's schema and a param the agent does not
// take are reported together, before anything runs.
func TestRunSeedValuesAndParamsChecks(t *testing.T) {
	url := pipelineMesh(t)
	good := pipelineFile(t, "seeded.yaml", `name: seeded
seed:
  values:
    greeting: {data_type: TEXT, value: "seeded words here"}
steps:
  - {id: shout, agent: TextAgent, params: {op: upper}, inputs: {text: seed.greeting}}
`)
	var out, errOut bytes.Buffer
	if code := run([]string{"--nats", url, "run", good}, &out, &errOut); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, &out, &errOut)
	}
	if !strings.Contains(out.String(), `"SEEDED WORDS HERE"`) {
		t.Errorf("the seeded text did not reach the step:\n%s", &out)
	}
	bad := pipelineFile(t, "bad.yaml", `name: bad
seed:
  values:
    greeting: {data_type: TEXT, value: {not: text}}
steps:
  - {id: shout, agent: TextAgent, params: {op: upper, oops: 1}, inputs: {text: seed.greeting}}
`)
	out.Reset()
	errOut.Reset()
	code := run([]string{"--nats", url, "run", bad}, &out, &errOut)
	msg := strings.TrimRight(errOut.String(), "\n")
	if code != 1 || strings.Contains(msg, "\n") {
		t.Fatalf("exit %d, stderr %q; want 1 and one line", code, msg)
	}
	for _, want := range []string{"seed.values.greeting", "TEXT value is invalid", "oops"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr %q does not say %q", msg, want)
		}
	}
}

// runs lists the runs, most recent first, with status and step counts.
func TestRunsCommand(t *testing.T) {
	url := pipelineMesh(t)
	var out, errOut bytes.Buffer
	if code := run([]string{"--nats", url, "runs"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "no runs yet") {
		t.Errorf("runs of none: exit %d, %q %q", code, &out, &errOut)
	}
	for _, id := range []string{"first-run", "second-run"} {
		out.Reset()
		if code := run([]string{"--nats", url, "run", pipelineFile(t, "shout.yaml", shoutPipeline), "--run-id", id}, &out, &errOut); code != 0 {
			t.Fatalf("run %s: exit %d\n%s%s", id, code, &out, &errOut)
		}
	}
	out.Reset()
	errOut.Reset()
	if code := run([]string{"--nats", url, "runs", "--limit", "1"}, &out, &errOut); code != 0 {
		t.Fatalf("runs: exit %d: %s", code, &errOut)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "RUN") || !strings.HasPrefix(lines[1], "second-run") ||
		!strings.Contains(lines[1], "shout") || !strings.Contains(lines[1], "completed") || !strings.Contains(lines[1], "2/2") || !strings.Contains(lines[1], "ago") {
		t.Errorf("runs --limit 1:\n%s", &out)
	}
	if !strings.Contains(errOut.String(), "showing the 1 most recent of 2 runs") {
		t.Errorf("runs --limit 1 does not say what it left out: %q", &errOut)
	}
	out.Reset()
	if code := run([]string{"--nats", url, "--json", "runs"}, &out, &errOut); code != 0 {
		t.Fatalf("runs --json: exit %d", code)
	}
	var runs []state.RunSummary
	if err := json.Unmarshal(out.Bytes(), &runs); err != nil || len(runs) != 2 || runs[1].ID != "first-run" || runs[1].Completed != 2 || runs[1].Steps != 2 {
		t.Errorf("runs --json: %v %+v", err, runs)
	}
	if code := run([]string{"--nats", url, "runs", "--limit", "-1"}, &out, &errOut); code != exitUsage {
		t.Errorf("runs --limit -1: exit %d, want %d (a bad flag value)", code, exitUsage)
	}
}
