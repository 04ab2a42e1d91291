package proctest

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
)

// A process's ready lines come out in order with their groups; its stderr
// is kept; the test's end stops it with the signal asked for.
func TestStartWaitsForReadyLines(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", `trap 'exit 0' INT; echo noise; echo "ready 1"; echo "oops" >&2; echo "ready 2"; while :; do sleep 0.05; done`)
	var p *Proc
	t.Run("run", func(t *testing.T) {
		p = Start(t, cmd, regexp.MustCompile(`^ready (\d)$`))
		p.StopWith(os.Interrupt, 10*time.Second)
		if m := p.WaitReady(t); m[1] != "1" {
			t.Fatalf("first ready line: %q", m)
		}
		if m := p.WaitReady(t); m[1] != "2" {
			t.Fatalf("second ready line: %q", m)
		}
		fixture.Within(5*time.Second, func() bool { return strings.Contains(p.Stderr.String(), "oops") })
		if got := p.Stderr.String(); got != "oops\n" {
			t.Fatalf("stderr %q", got)
		}
	})
	select {
	case <-p.Exited():
	default:
		t.Fatal("the process runs on after its test ended")
	}
	if p.Err() != nil {
		t.Fatalf("exit after SIGINT: %v, want status 0", p.Err())
	}
}
