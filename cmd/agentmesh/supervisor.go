package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// child is one process the supervisor runs: the orchestrator or one agent
// instance, each a copy of this binary with its own sub-command. The
// supervisor starts it again when it exits on its own.
type child struct {
	Name string   // shown in the status table, e.g. "AnalysisAgent#2"
	Args []string // sub-command and flags

	mu      sync.Mutex
	cur     *proc         // the current (or last) process
	stopped chan struct{} // closed when the supervisor no longer runs it
	gaveUp  error         // why it was left down, if it was
	stderr  *prefixWriter
}

// proc is one run of a child.
type proc struct {
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{} // closed when the process has exited
	err     error         // its exit, valid after done
}

// restartPolicy says when a child that exited is started again: after
// first, then twice as long after each quick exit in a row, up to max. A
// child that ran for stable before exiting starts the count again; after
// giveUp quick exits in a row it is left down.
type restartPolicy struct {
	first, max, stable time.Duration
	giveUp             int
}

var defaultRestart = restartPolicy{first: time.Second, max: 30 * time.Second, stable: 30 * time.Second, giveUp: 5}

// delay is the wait before the restart that follows the n-th quick exit.
func (p restartPolicy) delay(n int) time.Duration {
	d := p.first
	for i := 1; i < n && d < p.max; i++ {
		d *= 2
	}
	return min(d, p.max)
}

// supervisor starts children, restarts those that exit with back-off, and
// stops them all with SIGTERM, then SIGKILL after a grace period.
type supervisor struct {
	exe    string
	env    []string
	log    io.Writer
	grace  time.Duration
	policy restartPolicy

	mu       sync.Mutex
	children []*child
	stopping bool
	stopCh   chan struct{} // closed when stop begins
	loops    sync.WaitGroup
}

func newSupervisor(log io.Writer, env []string) (*supervisor, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find this program's own path to start child processes: %w", err)
	}
	return &supervisor{exe: exe, env: env, log: log, grace: 20 * time.Second, policy: defaultRestart, stopCh: make(chan struct{})}, nil
}

// errStopping refuses a (re)start once stop has begun.
var errStopping = errors.New("the supervisor is stopping")

// start launches c and keeps it running. Its output goes to the
// supervisor's log, each line prefixed with the child's name.
func (s *supervisor) start(c *child) error {
	c.stderr = &prefixWriter{prefix: c.Name + " | ", w: s.log}
	c.stopped = make(chan struct{})
	p, err := s.launch(c)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.children = append(s.children, c)
	s.mu.Unlock()
	s.loops.Add(1)
	go s.supervise(c, p)
	return nil
}

// launch starts one process of c, unless the supervisor is stopping.
func (s *supervisor) launch(c *child) (*proc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return nil, errStopping
	}
	cmd := exec.Command(s.exe, c.Args...)
	cmd.Env = s.env
	cmd.Stdout = c.stderr
	cmd.Stderr = c.stderr
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Name, err)
	}
	p := &proc{cmd: cmd, started: time.Now(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	c.mu.Lock()
	c.cur = p
	c.mu.Unlock()
	return p, nil
}

// supervise waits for c's process to exit and starts it again with
// back-off, until the supervisor stops or c exits quickly too often.
func (s *supervisor) supervise(c *child, p *proc) {
	defer s.loops.Done()
	defer close(c.stopped)
	quick := 0
	for {
		<-p.done
		if s.isStopping() {
			return
		}
		ran := time.Since(p.started)
		if ran >= s.policy.stable {
			quick = 0
		}
		quick++
		if quick >= s.policy.giveUp {
			c.mu.Lock()
			c.gaveUp = fmt.Errorf("%s exited %d times in a row, each within %s of starting (last: %s)", c.Name, quick, s.policy.stable, exitStatus(p.err))
			c.mu.Unlock()
			fmt.Fprintf(s.log, "up: giving up on %s: it exited %d times in a row, each within %s of starting (last: %s); the rest of the mesh keeps running: see its output above, fix the cause and start agentmesh up again\n",
				c.Name, quick, s.policy.stable, exitStatus(p.err))
			return
		}
		delay := s.policy.delay(quick)
		note := ""
		if quick > 1 {
			note = fmt.Sprintf(" (quick exit %d of %d before up gives up)", quick, s.policy.giveUp)
		}
		fmt.Fprintf(s.log, "up: %s (pid %d) exited after %s: %s; restarting in %s%s\n",
			c.Name, p.cmd.Process.Pid, ran.Round(time.Millisecond), exitStatus(p.err), delay, note)
		select {
		case <-time.After(delay):
		case <-s.stopCh:
			return
		}
		np, err := s.launch(c)
		switch {
		case errors.Is(err, errStopping):
			return
		case err != nil:
			// Count a failed start as a quick exit.
			fmt.Fprintf(s.log, "up: %v\n", err)
			p = &proc{cmd: p.cmd, started: time.Now(), done: make(chan struct{}), err: err}
			close(p.done)
		default:
			p = np
			fmt.Fprintf(s.log, "up: %s restarted as pid %d\n", c.Name, p.cmd.Process.Pid)
		}
	}
}

func (s *supervisor) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// exitStatus describes how a process ended, e.g. "exit status 1" or
// "signal: killed".
func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// running reports the children.
func (s *supervisor) running() []*child {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*child(nil), s.children...)
}

func (c *child) proc() *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

func (c *child) alive() bool {
	p := c.proc()
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (c *child) pid() int {
	if p := c.proc(); p != nil && p.cmd.Process != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// allDown returns a channel closed when the supervisor runs no child any
// more: every one was given up on, or stop ended them.
func (s *supervisor) allDown() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		s.loops.Wait()
		close(ch)
	}()
	return ch
}

// stop sends SIGTERM to every child (agents first, so in-flight tasks can
// still report to the orchestrator), waits for them to drain, and kills any
// that outlive the grace period. No child is restarted once stop has begun.
// It is safe to call twice.
func (s *supervisor) stop() error {
	s.mu.Lock()
	if !s.stopping {
		s.stopping = true
		close(s.stopCh)
	}
	s.mu.Unlock()
	var errs []error
	children := s.running()
	stopGroup := func(group []*child) {
		for _, c := range group {
			if p := c.proc(); c.alive() {
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
			}
		}
		deadline := time.After(s.grace)
		for _, c := range group {
			select {
			case <-c.stopped:
			case <-deadline:
				p := c.proc()
				_ = p.cmd.Process.Kill()
				<-c.stopped
				errs = append(errs, fmt.Errorf("%s did not stop within %s and was killed", c.Name, s.grace))
			}
		}
	}
	var agentsGroup, others []*child
	for _, c := range children {
		if len(c.Args) > 0 && c.Args[0] == "agent" {
			agentsGroup = append(agentsGroup, c)
		} else {
			others = append(others, c)
		}
	}
	stopGroup(agentsGroup)
	stopGroup(others)
	for _, c := range children {
		c.mu.Lock()
		p, gaveUp := c.cur, c.gaveUp
		c.mu.Unlock()
		var ee *exec.ExitError
		switch {
		case gaveUp != nil:
			errs = append(errs, fmt.Errorf("up gave up on %s: %w", c.Name, gaveUp))
		case p != nil && errors.As(p.err, &ee) && ee.ExitCode() > 0:
			errs = append(errs, fmt.Errorf("%s exited with status %d", c.Name, ee.ExitCode()))
		}
	}
	return errors.Join(errs...)
}

// prefixWriter writes each line with a prefix, so interleaved output of many
// children stays readable.
type prefixWriter struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i]); err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

// lockedWriter serialises writes from many children to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
