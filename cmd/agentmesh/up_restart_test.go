package main

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const slowPipeline = `name: survive
steps:
  - id: slow
    agent: TextAgent
    params: {op: upper, delay_ms: 3000}
    inputs: {text: "text:survive a crash"}
  - id: count
    agent: TextAgent
    depends_on: [slow]
    params: {op: wordcount}
`

// TestUpRestartsAKilledAgentWhileARunCompletes SIGKILLs the TextAgent child
// of `agentmesh up` while it works on a run's first step: up says so and
// starts it again, the task goes to the new instance, and the run (followed
// by a separate `agentmesh run` process) completes.
func TestUpRestartsAKilledAgentWhileARunCompletes(t *testing.T) {
	bin := agentBinary(t)
	up := startUp(t, bin)
	m := regexp.MustCompile(`(?m)^TextAgent\s+(\d+)\s+running$`).FindStringSubmatch(up.output())
	if m == nil {
		t.Fatalf("no TextAgent in the status table:\n%s", up.output())
	}
	victim, _ := strconv.Atoi(m[1])

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := nats.Connect(up.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}

	runCmd := exec.CommandContext(ctx, bin, "run", pipelineFile(t, "survive.yaml", slowPipeline), "--nats", up.url, "--run-id", "survive-1")
	runCmd.Env = cleanEnv()
	var runOut bytes.Buffer
	runCmd.Stdout, runCmd.Stderr = &runOut, &runOut
	if err := runCmd.Start(); err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- runCmd.Wait() }()

	waitAckPending(t, ctx, js, 1) // the TextAgent child holds the slow step's task
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	restarted := regexp.MustCompile(`up: TextAgent restarted as pid (\d+)`)
	var newPid int
	if !fixture.Within(30*time.Second, func() bool {
		if m := restarted.FindStringSubmatch(up.output()); m != nil {
			newPid, _ = strconv.Atoi(m[1])
		}
		return newPid != 0
	}) {
		t.Fatalf("up did not restart TextAgent:\n%s", up.output())
	}
	t.Logf("TextAgent pid %d SIGKILLed; restarted as pid %d after %s", victim, newPid, time.Since(killed).Round(time.Millisecond))
	if want := "up: TextAgent (pid " + strconv.Itoa(victim) + ") exited after "; !strings.Contains(up.output(), want) ||
		!strings.Contains(up.output(), "signal: killed; restarting in 1s") {
		t.Errorf("up's log does not name the child, its exit and the delay:\n%s", up.output())
	}

	select {
	case err := <-runDone:
		if err != nil || !strings.Contains(runOut.String(), "run survive-1 completed: 2 completed") {
			t.Fatalf("the run did not complete after the restart: %v\n%s\nup:\n%s", err, &runOut, up.output())
		}
	case <-ctx.Done():
		t.Fatalf("the run is still going:\n%s\nup:\n%s", &runOut, up.output())
	}
	t.Logf("run completed %s after the kill", time.Since(killed).Round(time.Millisecond))
	if !alive(newPid) {
		t.Errorf("the restarted TextAgent (pid %d) is not running", newPid)
	}

	if err := up.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := up.wait(60 * time.Second); err != nil {
		t.Fatalf("up did not exit 0 after Ctrl-C: %v\n%s", err, up.output())
	}
	assertGone(t, append(up.children, newPid))
}
