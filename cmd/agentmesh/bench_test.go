package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchCommand runs the codec comparison through the CLI and checks the
// JSON report carries both sides and their ratio.
func TestBenchCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"bench", "--only", "codec", "--rounds", "1", "--json"}, &out, &errOut); code != 0 {
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
	if len(got) != 1 || got[0].ID != "codec" || got[0].Rounds != 1 || got[0].Mesh.NsPerOp <= 0 || got[0].Base.NsPerOp <= 0 ||
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
