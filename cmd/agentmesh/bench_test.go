package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
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
