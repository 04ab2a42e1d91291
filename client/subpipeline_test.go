package client

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/pipelinespec"
)

// TestLoadPipelineReadsSubFiles: a pipeline step's file is read relative
// to the file naming it, recursively, and a file that runs itself through
// another is refused with the chain.
func TestLoadPipelineReadsSubFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("sub/leaf.yaml", "name: leaf\nsteps: [{id: s, agent: TextAgent, params: {n: 1}}]\n")
	write("sub/mid.yaml", "name: mid\nsteps: [{id: m, kind: pipeline, pipeline: {file: leaf.yaml}}]\n")
	top := write("top.yaml", "name: top\nsteps: [{id: t, kind: pipeline, pipeline: {file: sub/mid.yaml}}]\n")
	spec, err := LoadPipeline(top)
	if err != nil {
		t.Fatal(err)
	}
	leaf := spec.Steps[0].Pipeline.Spec.Steps[0].Pipeline.Spec
	if leaf == nil || leaf.Name != "leaf" || leaf.Steps[0].Params["n"] != float64(1) {
		t.Fatalf("leaf not read: %+v", leaf)
	}

	a := write("a.yaml", "name: a\nsteps: [{id: x, kind: pipeline, pipeline: {file: b.yaml}}]\n")
	write("b.yaml", "name: b\nsteps: [{id: y, kind: pipeline, pipeline: {file: a.yaml}}]\n")
	_, err = LoadPipeline(a)
	if !errors.Is(err, pipelinespec.ErrCycle) || !strings.Contains(err.Error(), "runs a pipeline it is part of") ||
		!strings.Contains(err.Error(), "a.yaml -> "+filepath.Join(dir, "b.yaml")) {
		t.Fatalf("err = %v, want a cycle a -> b -> a", err)
	}
}
