package main

import (
	"bytes"
	"context"
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
// instance, each a copy of this binary with its own sub-command.
type child struct {
	Name string   // shown in the status table, e.g. "AnalysisAgent#2"
	Args []string // sub-command and flags

	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	stderr *prefixWriter
}

// supervisor starts children, restarts none (a crashed child is reported),
// and stops them all with SIGTERM, then SIGKILL after a grace period.
type supervisor struct {
	exe      string
	env      []string
	log      io.Writer
	grace    time.Duration
	mu       sync.Mutex
	children []*child
}

func newSupervisor(log io.Writer, env []string) (*supervisor, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find this program's own path to start child processes: %w", err)
	}
	return &supervisor{exe: exe, env: env, log: log, grace: 20 * time.Second}, nil
}

// start launches c. Its output goes to the supervisor's log, each line
// prefixed with the child's name.
func (s *supervisor) start(c *child) error {
	c.cmd = exec.Command(s.exe, c.Args...)
	c.cmd.Env = s.env
	c.stderr = &prefixWriter{prefix: c.Name + " | ", w: s.log}
	c.cmd.Stdout = c.stderr
	c.cmd.Stderr = c.stderr
	c.cmd.SysProcAttr = childProcAttr()
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.Name, err)
	}
	c.done = make(chan struct{})
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	s.mu.Lock()
	s.children = append(s.children, c)
	s.mu.Unlock()
	return nil
}

// running reports the children and whether each is still alive.
func (s *supervisor) running() []*child {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*child(nil), s.children...)
}

func (c *child) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

func (c *child) pid() int {
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// exited returns a channel that yields the first child to exit.
func (s *supervisor) exited(ctx context.Context) <-chan *child {
	out := make(chan *child, 1)
	for _, c := range s.running() {
		go func(c *child) {
			select {
			case <-c.done:
				select {
				case out <- c:
				default:
				}
			case <-ctx.Done():
			}
		}(c)
	}
	return out
}

// stop sends SIGTERM to every child (agents first, so in-flight tasks can
// still report to the orchestrator), waits for them to drain, and kills any
// that outlive the grace period. It is safe to call twice.
func (s *supervisor) stop() error {
	var errs []error
	children := s.running()
	stopGroup := func(group []*child) {
		for _, c := range group {
			if c.alive() {
				_ = c.cmd.Process.Signal(syscall.SIGTERM)
			}
		}
		deadline := time.After(s.grace)
		for _, c := range group {
			select {
			case <-c.done:
			case <-deadline:
				_ = c.cmd.Process.Kill()
				<-c.done
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
		var ee *exec.ExitError
		if c.err != nil && errors.As(c.err, &ee) && ee.ExitCode() > 0 {
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
