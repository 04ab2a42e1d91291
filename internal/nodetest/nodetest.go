// Package nodetest helps tests run the project's Node.js code (the
// TypeScript SDK, examples/node and the JavaScript bridges' checks): it
// finds node and npm, installs a folder's locked dependencies and builds
// the local packages it depends on.
package nodetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/proctest"
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
// install). A local package dir depends on (a "file:" dependency, such as
// examples/node's on sdk/typescript) is linked, not copied, and npm
// installs nothing of its own: Install installs its dependencies and
// builds it (npm run build) first. Tests of several packages may install
// the same folder at once: each folder is installed under a file lock.
func Install(tb testing.TB, npm, dir string) {
	tb.Helper()
	for _, local := range localDeps(tb, dir) {
		Install(tb, npm, local)
		build(tb, npm, local, false)
	}
	unlock := lock(tb, dir)
	defer unlock()
	lockFile, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		tb.Fatalf("%s has no package-lock.json: %v", dir, err)
	}
	if inst, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil && !inst.ModTime().Before(lockFile.ModTime()) {
		return
	}
	npmIn(tb, npm, dir, "ci", "--no-audit", "--no-fund")
}

// Build runs npm run build in dir, under the folder's file lock.
func Build(tb testing.TB, npm, dir string) {
	tb.Helper()
	build(tb, npm, dir, true)
}

// buildStamp is written into node_modules after a build: npm ci removes
// it, and a file of the package changed after it makes the build stale.
const buildStamp = ".agentmesh-build"

// build runs npm run build in dir; unless always, only when a file of dir
// (outside node_modules and dist) is newer than the last build's stamp.
func build(tb testing.TB, npm, dir string, always bool) {
	tb.Helper()
	unlock := lock(tb, dir)
	defer unlock()
	stamp := filepath.Join(dir, "node_modules", buildStamp)
	if !always && !stale(dir, stamp) {
		return
	}
	npmIn(tb, npm, dir, "run", "build")
	if err := os.WriteFile(stamp, nil, 0o644); err != nil {
		tb.Fatalf("after building %s: %v", dir, err)
	}
}

// stale reports whether the build of dir is missing or older than a file
// of dir outside node_modules and dist.
func stale(dir, stamp string) bool {
	st, err := os.Stat(stamp)
	if err != nil {
		return true
	}
	newer := false
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || newer {
			return filepath.SkipAll
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "dist") {
			return filepath.SkipDir
		}
		if info, err := d.Info(); err == nil && !d.IsDir() && info.ModTime().After(st.ModTime()) {
			newer = true
		}
		return nil
	})
	return newer
}

func npmIn(tb testing.TB, npm, dir string, args ...string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("npm %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

// localDeps returns the folders of dir's "file:" dependencies that hold a
// package.json with a build script.
func localDeps(tb testing.TB, dir string) []string {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		tb.Fatalf("%s has no package.json: %v", dir, err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		tb.Fatalf("%s/package.json: %v", dir, err)
	}
	var out []string
	for _, spec := range pkg.Dependencies {
		rel, ok := strings.CutPrefix(spec, "file:")
		if !ok {
			continue
		}
		local := filepath.Join(dir, rel)
		raw, err := os.ReadFile(filepath.Join(local, "package.json"))
		if err != nil {
			continue // a tarball, not a folder
		}
		var dep struct {
			Scripts map[string]string `json:"scripts"`
		}
		if json.Unmarshal(raw, &dep) == nil && dep.Scripts["build"] != "" {
			out = append(out, local)
		}
	}
	return out
}

// lock takes an exclusive file lock for dir, shared by every test process
// of this machine, and returns its release.
func lock(tb testing.TB, dir string) func() {
	tb.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256([]byte(abs))
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "agentmesh-npm-"+hex.EncodeToString(sum[:8])+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		tb.Fatalf("locking %s for npm: %v", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		tb.Fatalf("locking %s for npm: %v", dir, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}

// Process is a node program a test runs: its output, and its exit once
// Exited is closed (Err is its status then).
type Process struct {
	Cmd    *exec.Cmd
	Out    *proctest.Buffer
	Exited chan struct{} // closed when the process has exited
	Err    error         // its exit status, once Exited is closed
}

// Start runs node script with NATS_URL=natsURL and env added to the
// environment; the process is killed when the test ends, and its output
// logged when the test failed.
func Start(tb testing.TB, node, script, natsURL string, env ...string) *Process {
	tb.Helper()
	p := &Process{Out: &proctest.Buffer{}, Exited: make(chan struct{})}
	p.Cmd = exec.Command(node, script)
	p.Cmd.Env = append(append(os.Environ(), "NATS_URL="+natsURL), env...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Out, p.Out
	if err := p.Cmd.Start(); err != nil {
		tb.Fatalf("starting node %s: %v", script, err)
	}
	go func() {
		p.Err = p.Cmd.Wait()
		close(p.Exited)
	}()
	tb.Cleanup(func() {
		select {
		case <-p.Exited:
		default:
			_ = p.Cmd.Process.Kill()
			<-p.Exited
		}
		if tb.Failed() {
			tb.Logf("output of node %s:\n%s", script, p.Out.String())
		}
	})
	return p
}
