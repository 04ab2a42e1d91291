package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// watchResult is what one in-process watch printed and its exit status.
type watchResult struct {
	code        int
	out, errOut string
}

// startWatch runs `agentmesh watch ID` in-process; the channel gets its
// result when it returns.
func startWatch(url, id string) <-chan watchResult {
	done := make(chan watchResult, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := run([]string{"--nats", url, "watch", id}, &out, &errOut)
		done <- watchResult{code, out.String(), errOut.String()}
	}()
	return done
}

// waitWatch waits for a watch to end; one that does not end with its run
// fails the test (before the fix, watch waited for Ctrl-C).
func waitWatch(t *testing.T, done <-chan watchResult, what string) watchResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(60 * time.Second):
		t.Fatalf("watch of %s did not end with its run", what)
		return watchResult{}
	}
}

// TestWatchEndsWithItsRun: watch of an ended run prints it and exits by its
// outcome (0 completed, 1 failed); watch of a live run that is cancelled
// says cancelled and exits 3; watch of an id that does not exist exits 1 at
// once, naming it.
func TestWatchEndsWithItsRun(t *testing.T) {
	url := pipelineMesh(t)

	if code, _, errOut := runArgs("--nats", url, "run", pipelineFile(t, "shout.yaml", shoutPipeline), "--run-id", "done-run"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	r := waitWatch(t, startWatch(url, "done-run"), "a completed run")
	if r.code != 0 || !strings.Contains(r.out, "run done-run completed") {
		t.Errorf("watch of a completed run: exit %d\n%s%s", r.code, r.out, r.errOut)
	}

	failing := "name: fails\nsteps:\n  - id: a\n    agent: TextAgent\n    params: {op: upper}\n    inputs: {text: \"text:x\"}\n  - id: b\n    kind: approval\n    depends_on: [a]\n    timeout_ms: 1\n    human: {prompt: \"too late\"}\n"
	if code, _, errOut := runArgs("--nats", url, "run", pipelineFile(t, "fails.yaml", failing), "--run-id", "failed-run"); code != 1 {
		t.Fatalf("run of a failing pipeline: exit %d, want 1: %s", code, errOut)
	}
	r = waitWatch(t, startWatch(url, "failed-run"), "a failed run")
	if r.code != 1 || !strings.Contains(r.out, "run failed-run failed") || !strings.Contains(r.errOut, "run failed-run failed") {
		t.Errorf("watch of a failed run: exit %d\n%s%s", r.code, r.out, r.errOut)
	}

	code, out, errOut := runArgs("--nats", url, "watch", "no-such-run")
	if code != 1 || out != "" || !strings.Contains(errOut, `no run or conversation "no-such-run"`) {
		t.Errorf("watch of an unknown id: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// A run cancelled while its step runs: watch says cancelled, exit 3.
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	names, _ := bus.NewNames("mesh")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec := pipelinespec.PipelineSpec{Name: "slow", Steps: []pipelinespec.PipelineStep{{
		ID: "hold", Agent: "TextAgent", Params: map[string]any{"op": "upper", "delay_ms": 60000}, TimeoutMS: 120000,
		Inputs: map[string]string{"text": "text:x"},
	}}}
	events, stop, err := client.Follow(ctx, js, names, names.EventsOf("slow-run"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if _, err := client.SubmitPipeline(ctx, js, names, spec, "slow-run", "test"); err != nil {
		t.Fatal(err)
	}
	var task string
	for task == "" {
		select {
		case ev := <-events:
			var se schemas.StepEvent
			if ev.Type == bus.TypeStepStarted && ev.DataAs(&se) == nil {
				task = se.TaskID
			}
		case <-ctx.Done():
			t.Fatal("the slow step did not start")
		}
	}
	done := startWatch(url, "slow-run")
	control, _ := names.Control("TextAgent")
	body, _ := json.Marshal(map[string]string{"taskid": task})
	// A cancel reaches a task an instance holds or is about to start: ask
	// until the step fails.
	for failed := false; !failed; {
		if err := nc.Publish(control, body); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-events:
			var se schemas.StepEvent
			failed = ev.Type == bus.TypeStepFailed && ev.DataAs(&se) == nil && se.Code == schemas.CodeCancelled
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no instance cancelled the held task")
		}
	}
	r = waitWatch(t, done, "a cancelled run")
	if r.code != exitCancelled || !strings.Contains(r.out, "run slow-run cancelled") || strings.Contains(r.out, "run slow-run failed") ||
		!strings.Contains(r.errOut, "run slow-run cancelled") {
		t.Errorf("watch of a cancelled run: exit %d, want %d\n%s%s", r.code, exitCancelled, r.out, r.errOut)
	}
	if code, out, errOut := runArgs("--nats", url, "state", "show", "slow-run"); code != 0 || !strings.Contains(out, `run slow-run  "slow"  cancelled`) {
		t.Errorf("state show of a cancelled run: exit %d\n%s%s", code, out, errOut)
	}
	// Stored as cancelled: runs and --json read the run's own status.
	if code, out, errOut := runArgs("--nats", url, "runs"); code != 0 || !regexp.MustCompile(`(?m)^slow-run\s+slow\s+cancelled\s`).MatchString(out) {
		t.Errorf("runs lists the cancelled run as: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runArgs("--nats", url, "--json", "state", "show", "slow-run"); code != 0 || !strings.Contains(out, `"status": "cancelled"`) {
		t.Errorf("state show --json of a cancelled run: exit %d\n%s%s", code, out, errOut)
	}
}
