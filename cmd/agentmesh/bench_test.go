package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// TestBenchCommand runs the direct call comparison through the CLI and
// checks the JSON report carries both sides and their ratio.
func TestBenchCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"bench", "--only", "direct-call", "--rounds", "1", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	type side struct {
		NsPerOp float64 `json:"ns_per_op"`
		PerSec  float64 `json:"per_s"`
	}
	var got []struct {
		ID     string  `json:"id"`
		Mesh   side    `json:"agentmesh"`
		Base   side    `json:"baseline_figures"`
		Ratio  float64 `json:"ratio"`
		Rounds int     `json:"rounds"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(got) != 1 || got[0].ID != "direct-call" || got[0].Rounds != 1 || got[0].Mesh.NsPerOp <= 0 || got[0].Base.NsPerOp <= 0 ||
		got[0].Mesh.PerSec <= 0 || got[0].Base.PerSec <= 0 || got[0].Ratio <= 0 {
		t.Fatalf("report = %+v", got)
	}
}

// TestBenchOnlyUnknown names the scenarios when --only names none, and
// does not take a part of a name for the whole.
func TestBenchOnlyUnknown(t *testing.T) {
	for _, only := range []string{"durable", "no-such"} {
		var out, errOut bytes.Buffer
		if code := run([]string{"bench", "--only", only}, &out, &errOut); code == 0 {
			t.Fatalf("--only %s: exit 0", only)
		}
		if msg := errOut.String(); !strings.Contains(msg, `"`+only+`" does not exist`) || !strings.Contains(msg, "durable-hop") {
			t.Fatalf("--only %s: %s", only, msg)
		}
	}
}

// TestBenchCodecPointsToGoTest: the codec's baseline is sdk-go, which the
// binary does not link, so --only codec says where the scenario runs.
func TestBenchCodecPointsToGoTest(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"bench", "--only", "codec"}, &out, &errOut); code == 0 {
		t.Fatal("--only codec: exit 0")
	}
	if msg := errOut.String(); !strings.Contains(msg, "does not link") || !strings.Contains(msg, "go test -run '^$' -bench 'Suite/codec' ./internal/benchsuite/") {
		t.Fatalf("--only codec: %s", msg)
	}
}

// TestBenchReportsFailedScenario: when the server refuses the throughput
// scenario's tasks (MESH_TASKS full: one message at most, new ones
// refused), bench says so for that scenario and still prints the other
// scenarios' figures, where a failed publish used to panic inside
// testing.Benchmark and lose the whole run's output (or, had the publish
// errors been seen, report 0s/op and exit 0).
func TestBenchReportsFailedScenario(t *testing.T) {
	emb, _, js, _, res := provisionedServer(t)
	ctx := context.Background()
	cfg := res.Tasks.CachedInfo().Config
	cfg.MaxMsgs, cfg.Discard = 1, jetstream.DiscardNew
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	// The binary, not run(): outside go test, b.Fatal in testing.Benchmark
	// panics.
	var out, errOut bytes.Buffer
	cmd := exec.Command(agentBinary(t), "bench", "--nats", emb.URL(), "--only", "throughput,direct-call", "--rounds", "1")
	cmd.Env, cmd.Stdout, cmd.Stderr = cleanEnv(), &out, &errOut
	if err := cmd.Run(); err == nil {
		t.Fatalf("exit 0 with MESH_TASKS full\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	if msg := errOut.String(); !strings.Contains(msg, "throughput, agentmesh: tasks: publish") || !strings.Contains(msg, "maximum messages") ||
		!strings.Contains(msg, "1 of 2 scenarios failed (throughput)") {
		t.Fatalf("stderr does not say why throughput failed:\n%s", msg)
	}
	if got := out.String(); !regexp.MustCompile(`(?m)^direct-call +p50 `).MatchString(got) || !regexp.MustCompile(`(?m)^FAILED throughput, agentmesh: `).MatchString(got) {
		t.Fatalf("stdout lacks direct-call's figures or throughput's failure:\n%s", got)
	}
}
