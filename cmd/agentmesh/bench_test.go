package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestBenchCommand runs the codec comparison through the CLI and checks the
// JSON report carries both sides and their ratio.
func TestBenchCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"bench", "--only", "codec", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got []struct {
		Name   string  `json:"name"`
		MeshNs float64 `json:"mesh_ns_per_op"`
		BaseNs float64 `json:"baseline_ns_per_op"`
		Ratio  float64 `json:"ratio"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(got) != 1 || got[0].MeshNs <= 0 || got[0].BaseNs <= 0 || got[0].Ratio <= 0 {
		t.Fatalf("report = %+v", got)
	}
}
