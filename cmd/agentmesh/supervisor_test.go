package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
)

func TestRestartPolicyDelay(t *testing.T) {
	p := defaultRestart
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 5: 16 * time.Second, 6: 30 * time.Second, 40: 30 * time.Second} {
		if got := p.delay(n); got != want {
			t.Errorf("delay after %d quick exits = %s, want %s", n, got, want)
		}
	}
}

// shellSupervisor runs children as /bin/sh scripts with a fast policy.
func shellSupervisor(t *testing.T, policy restartPolicy) (*supervisor, *lockedWriter, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	log := &lockedWriter{w: &buf}
	s, err := newSupervisor(log, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.exe, s.policy, s.grace = "/bin/sh", policy, 5*time.Second
	t.Cleanup(func() { _ = s.stop() })
	return s, log, &buf
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.(*bytes.Buffer).String()
}

// TestSupervisorGivesUpOnQuickExits: a child that fails at once is started
// again with doubling delays, then left down with a message naming it.
func TestSupervisorGivesUpOnQuickExits(t *testing.T) {
	s, log, _ := shellSupervisor(t, restartPolicy{first: 20 * time.Millisecond, max: 50 * time.Millisecond, stable: time.Minute, giveUp: 4})
	if err := s.start(&child{Name: "crashy", Args: []string{"-c", "exit 3"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.allDown():
	case <-time.After(10 * time.Second):
		t.Fatalf("the supervisor never gave up:\n%s", log)
	}
	out := log.String()
	for _, want := range []string{
		"crashy (pid ", "exit status 3; restarting in 20ms\n",
		"restarting in 40ms (quick exit 2 of 4", "restarting in 50ms (quick exit 3 of 4",
		"crashy restarted as pid", "giving up on crashy: it exited 4 times in a row",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "restarted as pid"); n != 3 {
		t.Errorf("%d restarts, want 3:\n%s", n, out)
	}
	if err := s.stop(); err == nil || !strings.Contains(err.Error(), "gave up on crashy") {
		t.Errorf("stop() = %v, want it to report the child it gave up on", err)
	}
}

// TestSupervisorKeepsRestartingAStableChild: a child that runs a while
// before each exit is restarted with the first delay every time, and stop
// ends it for good.
func TestSupervisorKeepsRestartingAStableChild(t *testing.T) {
	s, log, _ := shellSupervisor(t, restartPolicy{first: 10 * time.Millisecond, max: time.Second, stable: 100 * time.Millisecond, giveUp: 2})
	c := &child{Name: "steady", Args: []string{"-c", "sleep 0.15; exit 1"}}
	if err := s.start(c); err != nil {
		t.Fatal(err)
	}
	if !fixture.Within(10*time.Second, func() bool { return strings.Count(log.String(), "restarted as pid") >= 3 }) {
		t.Fatalf("fewer than 3 restarts:\n%s", log)
	}
	pid := c.pid()
	if err := s.stop(); err != nil && !strings.Contains(err.Error(), "status 1") {
		t.Errorf("stop: %v", err)
	}
	out := log.String()
	if strings.Contains(out, "giving up") || strings.Contains(out, "quick exit") {
		t.Errorf("a child that ran past the stable time should restart after the first delay, never give up:\n%s", out)
	}
	time.Sleep(300 * time.Millisecond)
	if alive(pid) || c.pid() != pid {
		t.Errorf("the child was restarted (or lives on) after stop: pid %d then %d", pid, c.pid())
	}
}
