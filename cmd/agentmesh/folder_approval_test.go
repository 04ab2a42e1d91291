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
	r := folderRig{srv: srv, bin: agentBinary(t), env: append(os.Environ(), "OPENAI_API_KEY=", "OPENAI_BASE_URL="),
		store: resolvers.NewObjectStore(res.Files)}
	start := func(args ...string) {
		cmd := exec.Command(r.bin, append([]string{"--nats", srv.URL()}, args...)...)
		cmd.Env = r.env
		startBackground(t, cmd)
	}
	start("orchestrator")
	start("agent", folder.Name)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, s := range []string{"q1 report", "q2 report"} {
		ref, err := r.store.Store(ctx, strings.NewReader(s), "text/plain", map[string]string{"filename": s + ".txt"})
		if err != nil {
			t.Fatal(err)
		}
		r.ids = append(r.ids, ref.ID)
	}
	example, err := os.ReadFile("../../examples/pipelines/folder-approval.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec := strings.NewReplacer("f-3kq2v7xw5h9b1d0mzr4a", r.ids[0], "f-8c6n2p0tq7yj5wslk3ue", r.ids[1]).Replace(string(example))
	r.file = filepath.Join(t.TempDir(), "folder-approval.yaml")
	if err := os.WriteFile(r.file, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	if r.js, err = jetstream.New(srv.Conn(t)); err != nil {
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
	r.decide(t, ctx, "fold-reject", "--reject", "failed", ",")
	r.decide(t, ctx, "fold-approve", "", "completed", "reports,reports")
}

// folderRig is the mesh of TestFolderApprovalExample: its pipeline file
// moves the two stored files ids once approved.
type folderRig struct {
	srv   *bustest.Server
	js    jetstream.JetStream
	bin   string
	env   []string
	file  string
	ids   []string
	store *resolvers.ObjectStore
}

// folders are the folders of the two files, joined by commas.
func (r folderRig) folders(t *testing.T, ctx context.Context) string {
	t.Helper()
	var out []string
	for _, id := range r.ids {
		ref, err := r.store.ResolveMetadata(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ref.Metadata[resolvers.MetaFolder])
	}
	return strings.Join(out, ",")
}

// decide runs the pipeline as run with `agentmesh run`, answers its
// waiting step with `agentmesh approve` (decision: "" or --reject), and
// checks the run's end and the files' folders.
func (r folderRig) decide(t *testing.T, ctx context.Context, run, decision, wantRun, wantFolders string) {
	t.Helper()
	events, stop, err := client.Follow(ctx, r.js, r.srv.Names(), r.srv.Names().EventsOf(run), false)
	if err != nil {
		t.Fatal(err)
	}
	runCmd := exec.Command(r.bin, "--nats", r.srv.URL(), "run", r.file, "--run-id", run)
	runCmd.Env = r.env
	var runOut proctest.Buffer
	runCmd.Stdout, runCmd.Stderr = &runOut, &runOut
	if err := runCmd.Start(); err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- runCmd.Wait() }()
	waitStepWaiting(t, ctx, events, "organise", &runOut)
	stop()
	if got := r.folders(t, ctx); got != "," {
		t.Fatalf("%s: files moved before anyone answered: %s", run, got)
	}
	args := []string{"--nats", r.srv.URL(), "approve", run, "organise", "--by", "ann"}
	if decision != "" {
		args = append(args, decision)
	}
	cmd := exec.Command(r.bin, args...)
	cmd.Env = r.env
	if out, errOut, code := runBinary(t, cmd); code != 0 {
		t.Fatalf("%s: approve: exit %d\n%s%s", run, code, out, errOut)
	}
	select {
	case <-runDone:
	case <-ctx.Done():
		t.Fatalf("%s: agentmesh run did not end\n%s", run, runOut.String())
	}
	out := runOut.String()
	for _, want := range []string{"approval: move 2 files into 1 folder (reports 2)?", "run " + run + " " + wantRun} {
		if !strings.Contains(out, want) {
			t.Errorf("%s: agentmesh run's output lacks %q:\n%s", run, want, out)
		}
	}
	if got := r.folders(t, ctx); got != wantFolders {
		t.Errorf("%s: folders %q, want %q", run, got, wantFolders)
	}
}
