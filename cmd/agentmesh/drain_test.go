package main

import (
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/internal/proctest"
)

// TestProcessesExitOnSIGTERMAfterTheirServerVanished: an agent and an
// orchestrator whose NATS server went away (and stays away) still exit on
// SIGTERM within their drain timeout instead of hanging on a drain that
// cannot reach anyone.
func TestProcessesExitOnSIGTERMAfterTheirServerVanished(t *testing.T) {
	bin := agentBinary(t)
	emb, err := embedded.Start(embedded.Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Shutdown)
	var procs []*proctest.Proc
	for _, args := range [][]string{
		{"agent", "TextAgent", "--heartbeat", "1s"},
		{"orchestrator"},
	} {
		cmd := exec.Command(bin, append(args, "--nats", emb.URL(), "--drain-timeout", "3s")...)
		cmd.Env = cleanEnv()
		p := proctest.Start(t, cmd, regexp.MustCompile(`ready`))
		p.WaitReady(t)
		procs = append(procs, p)
	}

	emb.Shutdown()
	time.Sleep(500 * time.Millisecond) // both notice the lost connection
	for _, p := range procs {
		if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for _, p := range procs {
		select {
		case <-p.Exited():
			t.Logf("%s exited %s after SIGTERM with its server gone (%v)", p.Cmd.Args[1], time.Since(start).Round(time.Millisecond), p.Err())
			if !strings.Contains(p.Stderr.String(), "did not finish draining within 3s") {
				t.Errorf("%s does not say why it stopped waiting:\n%s", p.Cmd.Args[1], p.Stderr)
			}
		case <-time.After(3*time.Second + 2*time.Second):
			t.Errorf("%s still running %s after SIGTERM with its server gone (drain timeout 3s)\n%s", p.Cmd.Args[1], time.Since(start).Round(time.Millisecond), p.Stderr)
		}
	}
}
