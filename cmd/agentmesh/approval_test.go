package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestApprovalSurvivesAKilledReplica runs examples/pipelines/approval.yaml
// with `agentmesh run`: while its approval step waits, the only orchestrator
// replica (a separate process) is SIGKILLed; another replica started after
// it takes `agentmesh approve` and `agentmesh input`, and the run completes.
// A second answer is refused with not_waiting.
func TestApprovalSurvivesAKilledReplica(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	bin := agentBinary(t)
	env := append(os.Environ(), "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	startOrch := func() (*exec.Cmd, *proctest.Buffer) {
		orch := exec.Command(bin, "--nats", srv.URL(), "orchestrator")
		orch.Env = env
		return orch, startBackground(t, orch)
	}
	first, firstOut := startOrch()
	startAgentProc(t, srv.URL())

	const run = "appr-kill"
	js, err := jetstream.New(srv.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	events, stop, err := client.Follow(ctx, js, srv.Names(), srv.Names().EventsOf(run), false)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	runCmd := exec.Command(bin, "--nats", srv.URL(), "run", "../../examples/pipelines/approval.yaml", "--run-id", run)
	runCmd.Env = env
	var runOut, runErr proctest.Buffer
	runCmd.Stdout, runCmd.Stderr = &runOut, &runErr
	if err := runCmd.Start(); err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- runCmd.Wait() }()
	t.Cleanup(func() { _ = runCmd.Process.Kill() })

	waitStepWaiting(t, ctx, events, "review", &runOut, &runErr, firstOut)
	cmd := exec.Command(bin, "--nats", srv.URL(), "runs")
	cmd.Env = env
	if out, errOut, code := runBinary(t, cmd); code != 0 || !strings.Contains(out, "review waiting for approval: Publish the draft?") {
		t.Errorf("agentmesh runs: exit %d, stdout %q does not show the waiting step (stderr %q)", code, out, errOut)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	_, secondOut := startOrch()

	answer := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, append([]string{"--nats", srv.URL()}, args...)...)
		cmd.Env = env
		return runBinary(t, cmd)
	}
	out, errOut, code := answer("approve", run, "review", "--comment", "looks good", "--by", "ann")
	if code != 0 || !strings.Contains(out, "approved by ann: looks good") {
		t.Fatalf("approve: exit %d\nstdout: %s\nstderr: %s\norchestrator: %s", code, out, errOut, secondOut)
	}
	waitStepWaiting(t, ctx, events, "title", &runOut, &runErr, firstOut)
	out, errOut, code = answer("input", run, "title", "Hello approved world")
	if code != 0 || !strings.Contains(out, "answered by") {
		t.Fatalf("input: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	select {
	case err := <-runDone:
		if err != nil {
			t.Fatalf("agentmesh run: %v\n%s%s\norchestrator: %s", err, runOut.String(), runErr.String(), secondOut)
		}
	case <-ctx.Done():
		t.Fatalf("the run did not end\n%s", runOut.String())
	}
	for _, want := range []string{"review", "waiting: approval: Publish the draft? (agentmesh approve appr-kill review [--reject])",
		"waiting: input (TEXT): Title of the post?", "run appr-kill completed: 4 completed"} {
		if !strings.Contains(runOut.String(), want) {
			t.Errorf("agentmesh run's output lacks %q:\n%s", want, runOut.String())
		}
	}
	_, errOut, code = answer("approve", run, "review")
	if code != 1 || !strings.Contains(errOut, "refused ("+schemas.CodeNotWaiting+")") {
		t.Errorf("a second approval: exit %d, stderr %q; want 1 and the not_waiting refusal", code, errOut)
	}
}

// waitStepWaiting reads events until step waits for a person, failing the
// test with logs when ctx ends first.
func waitStepWaiting(t *testing.T, ctx context.Context, events <-chan bus.Event, step string, logs ...fmt.Stringer) {
	t.Helper()
	for {
		select {
		case ev := <-events:
			if ev.Type == bus.TypeStepWaiting && ev.Ext(bus.ExtStepID) == step {
				return
			}
		case <-ctx.Done():
			var out strings.Builder
			for _, l := range logs {
				out.WriteString(l.String() + "\n")
			}
			t.Fatalf("step %s never waited\n%s", step, &out)
		}
	}
}

// startBackground starts cmd with its stdout and stderr in the returned
// buffer; it is killed when the test ends.
func startBackground(t *testing.T, cmd *exec.Cmd) *proctest.Buffer {
	t.Helper()
	out := &proctest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return out
}
