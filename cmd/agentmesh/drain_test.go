package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus"
)

// TestProcessesExitOnSIGTERMAfterTheirServerVanished: an agent and an
// orchestrator whose NATS server went away (and stays away) still exit on
// SIGTERM within their drain timeout instead of hanging on a drain that
// cannot reach anyone.
func TestProcessesExitOnSIGTERMAfterTheirServerVanished(t *testing.T) {
	bin := agentBinary(t)
	emb, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Shutdown)
	type proc struct {
		name string
		cmd  *exec.Cmd
		out  *bytes.Buffer
		done chan error
	}
	var procs []*proc
	for _, args := range [][]string{
		{"agent", "TextAgent", "--heartbeat", "1s"},
		{"orchestrator"},
	} {
		cmd := exec.Command(bin, append(args, "--nats", emb.URL(), "--drain-timeout", "3s")...)
		cmd.Env = cleanEnv()
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		p := &proc{name: args[0], cmd: cmd, out: &bytes.Buffer{}, done: make(chan error, 1)}
		cmd.Stderr = p.out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		ready := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if strings.Contains(sc.Text(), "ready") {
					close(ready)
					break
				}
			}
			for sc.Scan() {
			}
			p.done <- cmd.Wait()
		}()
		select {
		case <-ready:
		case err := <-p.done:
			t.Fatalf("%s exited before ready: %v\n%s", p.name, err, p.out)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s not ready after 30s\n%s", p.name, p.out)
		}
		procs = append(procs, p)
	}

	emb.Shutdown()
	time.Sleep(500 * time.Millisecond) // both notice the lost connection
	for _, p := range procs {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for _, p := range procs {
		select {
		case err := <-p.done:
			t.Logf("%s exited %s after SIGTERM with its server gone (%v)", p.name, time.Since(start).Round(time.Millisecond), err)
			if !strings.Contains(p.out.String(), "did not finish draining within 3s") {
				t.Errorf("%s does not say why it stopped waiting:\n%s", p.name, p.out)
			}
		case <-time.After(3*time.Second + 2*time.Second):
			t.Errorf("%s still running %s after SIGTERM with its server gone (drain timeout 3s)\n%s", p.name, time.Since(start).Round(time.Millisecond), p.out)
		}
	}
}
