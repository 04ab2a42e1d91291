// Package nodetest helps tests run the Node.js example (examples/node):
// it finds node and npm and installs the example's locked dependencies.
package nodetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Tools returns the paths of node and npm, or an error saying why the
// Node.js example cannot run here.
func Tools() (node, npm string, err error) {
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		return "", "", fmt.Errorf("node and npm are not on PATH (install Node.js 20 or later to run the Node.js example; CI does)")
	}
	return node, npm, nil
}

// Install runs npm ci in dir unless dir/node_modules already holds what
// its package-lock.json says (npm writes node_modules/.package-lock.json on
// install).
func Install(tb testing.TB, npm, dir string) {
	tb.Helper()
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		tb.Fatalf("%s has no package-lock.json: %v", dir, err)
	}
	if inst, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil && !inst.ModTime().Before(lock.ModTime()) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}
