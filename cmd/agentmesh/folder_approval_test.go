package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents/builtin/folder"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/resolvers"
)

// TestFolderApprovalExample runs examples/pipelines/folder-approval.yaml
// (its ids replaced by stored files) with the orchestrator and FolderAgent
// as separate processes: the step waits with the plan, `agentmesh approve
// --reject` leaves the files where they were; run again and approved, they
// move.
func TestFolderApprovalExample(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	bin := agentBinary(t)
	env := append(os.Environ(), "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	start := func(args ...string) {
		cmd := exec.Command(bin, append([]string{"--nats", srv.URL()}, args...)...)
		cmd.Env = env
		startBackground(t, cmd)
	}
	start("orchestrator")
	start("agent", folder.Name)

	store := resolvers.NewObjectStore(res.Files)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var ids []string
	for _, s := range []string{"q1 report", "q2 report"} {
		ref, err := store.Store(ctx, strings.NewReader(s), "text/plain", map[string]string{"filename": s + ".txt"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
	}
	example, err := os.ReadFile("../../examples/pipelines/folder-approval.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec := strings.NewReplacer("f-3kq2v7xw5h9b1d0mzr4a", ids[0], "f-8c6n2p0tq7yj5wslk3ue", ids[1]).Replace(string(example))
	file := filepath.Join(t.TempDir(), "folder-approval.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(srv.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := client.NewRegistry(ctx, res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	if err := reg.Wait(ctx, folder.Name, 1); err != nil {
		t.Fatal(err)
	}
	folders := func() string {
		var out []string
		for _, id := range ids {
			ref, err := store.ResolveMetadata(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ref.Metadata[resolvers.MetaFolder])
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		run, decision, wantRun, wantFolders string
	}{
		{"fold-reject", "--reject", "failed", ","},
		{"fold-approve", "", "completed", "reports,reports"},
	} {
		events, stop, err := client.Follow(ctx, js, srv.Names(), srv.Names().EventsOf(c.run), false)
		if err != nil {
			t.Fatal(err)
		}
		runCmd := exec.Command(bin, "--nats", srv.URL(), "run", file, "--run-id", c.run)
		runCmd.Env = env
		var runOut proctest.Buffer
		runCmd.Stdout, runCmd.Stderr = &runOut, &runOut
		if err := runCmd.Start(); err != nil {
			t.Fatal(err)
		}
		runDone := make(chan error, 1)
		go func() { runDone <- runCmd.Wait() }()
		waitStepWaiting(t, ctx, events, "organise", &runOut)
		stop()
		if got := folders(); got != "," {
			t.Fatalf("%s: files moved before anyone answered: %s", c.run, got)
		}
		args := []string{"--nats", srv.URL(), "approve", c.run, "organise", "--by", "ann"}
		if c.decision != "" {
			args = append(args, c.decision)
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		if out, errOut, code := runBinary(t, cmd); code != 0 {
			t.Fatalf("%s: approve: exit %d\n%s%s", c.run, code, out, errOut)
		}
		select {
		case <-runDone:
		case <-ctx.Done():
			t.Fatalf("%s: agentmesh run did not end\n%s", c.run, runOut.String())
		}
		out := runOut.String()
		for _, want := range []string{"approval: move 2 files into 1 folder (reports 2)?", "run " + c.run + " " + c.wantRun} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: agentmesh run's output lacks %q:\n%s", c.run, want, out)
			}
		}
		if got := folders(); got != c.wantFolders {
			t.Errorf("%s: folders %q, want %q", c.run, got, c.wantFolders)
		}
	}
}
