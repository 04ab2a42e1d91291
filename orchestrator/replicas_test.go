package orchestrator_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// replica is an `agentmesh orchestrator` process.
type replica struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func buildBinary(t testing.TB) string {
	t.Helper()
	bin := t.TempDir() + "/agentmesh"
	out, err := exec.Command("go", "build", "-o", bin, "github.com/agentmesh/agentmesh/cmd/agentmesh").CombinedOutput()
	if err != nil {
		t.Fatalf("building agentmesh: %v\n%s", err, out)
	}
	return bin
}

func startReplica(t testing.TB, bin, url string) *replica {
	t.Helper()
	cmd := exec.Command(bin, "orchestrator", "--nats", url, "--ack-wait", "2s")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case ready <- sc.Text():
			default:
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-r.done
		}
	})
	select {
	case line := <-ready:
		if !strings.Contains(line, "orchestrator ready") {
			t.Fatalf("replica said %q, want the ready line", line)
		}
	case <-r.done:
		t.Fatal("replica exited before it was ready")
	case <-time.After(20 * time.Second):
		t.Fatal("replica not ready")
	}
	return r
}

func TestTwoReplicaProcessesSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs 120 pipelines")
	}
	m := meshtest.New(t)
	var runs fixture.Counter
	hop := func(name string, in bool) {
		c := schemas.AgentContract{Name: name, Capability: schemas.CapTransformation, Description: "hop",
			Outputs: []schemas.TypedOutput{fixture.FilesOut("images", schemas.ContentImages, true)}}
		if in {
			c.Inputs = []schemas.TypedInput{fixture.FilesIn("images", schemas.ContentImages, true)}
		}
		m.Agent(t, c, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			time.Sleep(10 * time.Millisecond) // the agent's work, not a wait
			key := ec.Param("key") + "/" + name
			runs.Add(key)
			return fixture.OK(name, "", map[string]schemas.TypedValue{"images": fixture.Files(schemas.ContentImages, key)}), nil
		}, 16)
	}
	hop("HopA", false)
	hop("HopB", true)
	hop("HopC", true)
	bin := buildBinary(t)
	r1 := startReplica(t, bin, m.Srv.URL())
	startReplica(t, bin, m.Srv.URL())
	store := state.New(m.Res.Conversations, m.Res.Runs)

	submitMany := func(from, to int) []string {
		var ids []string
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := from; i < to; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("run-%03d", i)
				spec := client.NewPipeline(id).
					Step("a", "HopA").Param("key", id).
					Then("b", "HopB").Param("key", id).
					Then("c", "HopC").Param("key", id).MustBuild()
				m.Submit(t, spec, id)
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}()
		}
		wg.Wait()
		return ids
	}
	// The agents must be live for validation: wait through a registry view.
	reg, err := meshcore.NewRegistry(context.Background(), m.Res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	for _, a := range []string{"HopA", "HopB", "HopC"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := reg.Wait(ctx, a, 1); err != nil {
			t.Fatal(err)
		}
		cancel()
	}

	ids := submitMany(0, 100)
	for _, id := range ids {
		meshtest.WaitRun(t, store, id, 60*time.Second)
	}
	more := submitMany(100, 120)
	// Kill one replica in the middle of the 20: once some steps completed.
	fixture.Eventually(t, "the second batch under way", func() bool {
		n := 0
		for k := range runs.Snapshot() {
			if k >= "run-100" {
				n++
			}
		}
		return n >= 10
	})
	unfinished := 0
	for _, id := range more {
		if r, err := store.Run(context.Background(), id); err != nil || !r.Done() {
			unfinished++
		}
	}
	t.Logf("SIGKILL with %d of the last 20 runs unfinished", unfinished)
	if err := r1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-r1.done

	completed := 0
	for _, id := range append(ids, more...) {
		run := meshtest.WaitRun(t, store, id, 60*time.Second)
		if run.Status != schemas.RunCompleted {
			t.Errorf("run %s: %s %s", id, run.Status, run.Error)
			continue
		}
		// No lost update: every step's completion and routing is in the state.
		for _, s := range []string{"a", "b", "c"} {
			st := run.Steps[s]
			if st.Status != schemas.StepCompleted || !run.State.Applied(st.TaskID) {
				t.Errorf("run %s step %s: %s, applied %v", id, s, st.Status, run.State.Applied(st.TaskID))
			}
			completed++
		}
		if got := len(run.State.History); got != 3 {
			t.Errorf("run %s: %d history entries, want 3", id, got)
		}
		// The outputs are mergeable: the slot holds all three, in order.
		fc, _ := run.State.Slots[route.SlotImageIDs].Files()
		if want := []string{id + "/HopA", id + "/HopB", id + "/HopC"}; !slices.Equal(fc.IDs(), want) {
			t.Errorf("run %s: images slot %v, want %v", id, fc.IDs(), want)
		}
	}
	execs := runs.Snapshot()
	total := 0
	for k, n := range execs {
		total += n
		if n != 1 {
			t.Errorf("%s ran to completion %d times", k, n)
		}
	}
	if len(execs) != 360 || total != 360 || completed != 360 {
		t.Errorf("executions: %d keys, %d total, %d completed steps; want 360 each", len(execs), total, completed)
	}
}
