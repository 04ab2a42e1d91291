package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the binary that process tests build (agentBinary) once
// every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	if agentBinPath != "" {
		_ = os.RemoveAll(filepath.Dir(agentBinPath))
	}
	os.Exit(code)
}
