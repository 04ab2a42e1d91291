package orchestrator_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/meshtest"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

// startAgentProcess runs `agentmesh agent NAME` as its own process until
// the test ends and waits for its ready line.
func startAgentProcess(t testing.TB, bin, url, name string) {
	t.Helper()
	cmd := exec.Command(bin, "agent", name, "--nats", url, "--heartbeat", "1s")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	select {
	case line := <-lines:
		if !strings.Contains(line, "agent "+name) || !strings.Contains(line, "ready") {
			t.Fatalf("agent process said %q, want its ready line", line)
		}
	case <-done:
		t.Fatalf("agent %s exited before it was ready", name)
	case <-time.After(20 * time.Second):
		t.Fatalf("agent %s not ready", name)
	}
}

// The agents of this pipeline are `agentmesh agent TextAgent` processes:
// the first step's TEXT comes from a text: literal in the spec, the others
// from their parents, and every output is routed into the run's state.
func TestPipelineOfAgentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs agent processes")
	}
	m := meshtest.New(t)
	bin := buildBinary(t)
	startAgentProcess(t, bin, m.Srv.URL(), "TextAgent")
	startAgentProcess(t, bin, m.Srv.URL(), "TextAgent")
	o := m.Orchestrator(t, []string{"TextAgent"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := o.Registry().Wait(ctx, "TextAgent", 2); err != nil {
		t.Fatal(err)
	}

	spec := client.NewPipeline("text").
		Step("upper", "TextAgent").Param("op", "upper").Input("text", "text:hello agent mesh").
		Then("reverse", "TextAgent").Param("op", "reverse").
		Step("title", "TextAgent").After("upper").Param("op", "title").
		Step("count", "TextAgent").After("reverse", "title").Param("op", "wordcount").Input("text", "upper.text").
		MustBuild()
	run := meshtest.WaitRun(t, o.Store(), m.Submit(t, spec, "text-procs"), 30*time.Second)
	if run.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	for step, want := range map[string]string{"upper": "HELLO AGENT MESH", "reverse": "HSEM TNEGA OLLEH", "title": "Hello Agent Mesh", "count": "3"} {
		st := run.Steps[step]
		got, err := st.Outputs["text"].Text()
		if err != nil || got != want || st.Outputs["text"].Source != "TextAgent" {
			t.Errorf("step %s output %q (%v, from %q), want %q from TextAgent", step, got, err, st.Outputs["text"].Source, want)
		}
		if !run.State.Applied(st.TaskID) {
			t.Errorf("step %s: task %s not applied to the run's state", step, st.TaskID)
		}
	}
	if run.Steps["reverse"].Wave != 1 || run.Steps["title"].Wave != 1 || run.Steps["count"].Wave != 2 {
		t.Errorf("waves: %v", run.Waves)
	}
	// The TEXT slot holds the newest routed text: the last wave's count.
	if slot := run.State.Slots[route.SlotText]; slot.DataType != schemas.TypeText {
		t.Errorf("slot %s = %+v, want TEXT", route.SlotText, slot)
	} else if text, _ := slot.Text(); text != "3" {
		t.Errorf("slot %s = %q, want the count %q", route.SlotText, text, "3")
	}
	if got := len(run.State.History); got != 4 {
		t.Errorf("%d history entries, want one per step (4)", got)
	}
}
