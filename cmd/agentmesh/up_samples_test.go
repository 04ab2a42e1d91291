package main

import (
	"bufio"
	"context"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// storedFiles counts the files of the mesh at url by kind, and by name.
func storedFiles(t *testing.T, url string) (kinds map[string]int, names map[string]int) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	names0, _ := bus.NewNames("mesh")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obs, err := js.ObjectStore(ctx, names0.FilesStore())
	if err != nil {
		t.Fatal(err)
	}
	kinds, names = map[string]int{}, map[string]int{}
	for ref, err := range resolvers.NewObjectStore(obs).List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		kinds[resolvers.MediaKind(ref.MediaType)]++
		names[ref.Filename]++
	}
	return kinds, names
}

// stopUp sends Ctrl-C to up and waits for exit 0.
func stopUp(t *testing.T, up *upProc) {
	t.Helper()
	if err := up.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := up.wait(60 * time.Second); err != nil {
		t.Fatalf("up did not exit 0 after Ctrl-C: %v\n%s", err, up.output())
	}
	assertGone(t, up.children)
}

// TestUpStartsWithTheSamples runs the built binary's `up` three times on
// one store: with --empty the store stays empty; without, the sample
// images and documents are there once the mesh says it is up (the README's
// chat finds sunsets, KnowledgeAgent answers from the "samples" knowledge
// base); started again, it adds nothing.
func TestUpStartsWithTheSamples(t *testing.T) {
	bin := agentBinary(t)
	store := t.TempDir()
	images, docs := len(samples.Images()), len(samples.Documents())

	up := startUp(t, bin, "--store", store, "--http", "", "--empty")
	if kinds, _ := storedFiles(t, up.url); len(kinds) != 0 {
		t.Errorf("up --empty stored files: %v", kinds)
	}
	stopUp(t, up)

	for round := 1; round <= 2; round++ {
		up = startUp(t, bin, "--store", store, "--http", "")
		kinds, names := storedFiles(t, up.url)
		if kinds[schemas.ContentImages] != images || kinds[schemas.ContentDocuments] != docs {
			t.Errorf("start %d: the store holds %v, want %d images and %d documents\n%s", round, kinds, images, docs, up.output())
		}
		for name, n := range names {
			if n != 1 {
				t.Errorf("start %d: %s is stored %d times", round, name, n)
			}
		}
		if round == 1 {
			code, out, errOut := runArgs("--nats", up.url, "chat", demoMessage)
			if code != 0 || !strings.Contains(out, "sunset") {
				t.Errorf("the chat up suggests: exit %d\n%s%s", code, out, errOut)
			}
			// The sample documents are the knowledge base "samples", which
			// up's KnowledgeAgent serves.
			code, out, errOut = runArgs("--nats", up.url, "kb", "search", SamplesKB, "are gift cards refundable?", "--top-k", "1")
			if code != 0 || !strings.Contains(out, "refund-policy.md") || !strings.Contains(out, "Gift cards") {
				t.Errorf("kb search samples: exit %d\n%s%s", code, out, errOut)
			}
		}
		stopUp(t, up)
	}
}

// TestDemoStay runs `demo --stay`: after its report the mesh and the
// dashboard stay up, with the samples, until Ctrl-C; then it stops cleanly.
func TestDemoStay(t *testing.T) {
	bin := agentBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "demo", "--stay", "--http", "127.0.0.1:0")
	cmd.Env = cleanEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	stays := regexp.MustCompile(`== the mesh stays up on (nats://\S+) `)
	dashAt := regexp.MustCompile(`dashboard and API on (http://\S+/)`)
	sc := bufio.NewScanner(stdout)
	var seen []string
	var url, dash string
	for url == "" && sc.Scan() {
		line := sc.Text()
		seen = append(seen, line)
		if m := dashAt.FindStringSubmatch(line); m != nil {
			dash = m[1]
		}
		if m := stays.FindStringSubmatch(line); m != nil {
			url = m[1]
		}
	}
	if url == "" || dash == "" {
		t.Fatalf("demo --stay did not say the mesh and dashboard stay up:\n%s", strings.Join(seen, "\n"))
	}
	all := strings.Join(seen, "\n")
	if !strings.Contains(all, "== folders") || strings.Contains(all, "stopping the mesh") {
		t.Fatalf("demo --stay: the report should come first and the mesh not stop:\n%s", all)
	}
	if kinds, _ := storedFiles(t, url); kinds[schemas.ContentImages] != len(samples.Images()) {
		t.Errorf("after the report the mesh holds %v", kinds)
	}
	resp, err := http.Get(dash + "api/runs")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the dashboard's API after the report: %v %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		rest <- b.String()
	}()
	tail := <-rest
	if err := cmd.Wait(); err != nil || !strings.Contains(tail, "done") {
		t.Errorf("demo --stay after Ctrl-C: %v\n%s", err, tail)
	}
}
