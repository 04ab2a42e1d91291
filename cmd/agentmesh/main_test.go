package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the binary that process tests build (agentBinary) once
// every test has run. Started again by bench (run in a test, as
// TestBenchCommand does) to play a process of a scenario, the test binary
// is the agentmesh command instead: bench starts os.Executable() with
// "bench-role ROLE ...".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "bench-role" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	code := m.Run()
	if agentBinPath != "" {
		_ = os.RemoveAll(filepath.Dir(agentBinPath))
	}
	os.Exit(code)
}
