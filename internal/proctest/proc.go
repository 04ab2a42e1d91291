package proctest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// ReadyTimeout is how long WaitReady waits for a ready line.
const ReadyTimeout = 30 * time.Second

// Proc is a process started by Start.
type Proc struct {
	// Cmd is the started command.
	Cmd *exec.Cmd
	// Stderr holds what the process wrote to stderr.
	Stderr *Buffer

	ready   *regexp.Regexp
	matches chan []string
	exited  chan struct{}
	err     error // cmd.Wait's; set before exited is closed

	stopSig   os.Signal
	stopGrace time.Duration
}

// Start starts cmd and reads its stdout, keeping the lines that match
// ready for WaitReady (none when ready is nil). The process is killed when the test ends (see
// StopWith); if the test failed, its stderr is logged.
func Start(t testing.TB, cmd *exec.Cmd, ready *regexp.Regexp) *Proc {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &Proc{Cmd: cmd, Stderr: &Buffer{}, ready: ready, matches: make(chan []string, 16), exited: make(chan struct{})}
	cmd.Stderr = p.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.scan(stdout)
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("stderr of %s:\n%s", cmd.Args, p.Stderr)
		}
	})
	return p
}

// scan hands the stdout lines that match p.ready to WaitReady and reads
// the rest so that the process never blocks on a full pipe.
func (p *Proc) scan(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if p.ready == nil {
			continue
		}
		if m := p.ready.FindStringSubmatch(sc.Text()); m != nil {
			select {
			case p.matches <- m:
			default: // nobody waits for that many
			}
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
}

// WaitReady returns the submatches of the next stdout line matching the
// ready pattern, failing the test when the process exits first or prints
// none within ReadyTimeout.
func (p *Proc) WaitReady(t testing.TB) []string {
	t.Helper()
	select {
	case m := <-p.matches:
		return m
	case <-p.exited:
		t.Fatalf("%s exited before it was ready: %v\n%s", p.Cmd.Args, p.err, p.Stderr)
	case <-time.After(ReadyTimeout):
		t.Fatalf("%s not ready after %s\n%s", p.Cmd.Args, ReadyTimeout, p.Stderr)
	}
	return nil
}

// StopWith makes the test's end send sig and wait up to grace for the
// process to exit before it is killed.
func (p *Proc) StopWith(sig os.Signal, grace time.Duration) {
	p.stopSig, p.stopGrace = sig, grace
}

// Exited is closed once the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err is the process's exit error (nil for status 0); it is set once
// Exited is closed.
func (p *Proc) Err() error { return p.err }

func (p *Proc) stop() {
	if p.stopSig != nil && p.Cmd.Process.Signal(p.stopSig) == nil {
		select {
		case <-p.exited:
			return
		case <-time.After(p.stopGrace):
		}
	}
	_ = p.Cmd.Process.Kill()
	<-p.exited
}
