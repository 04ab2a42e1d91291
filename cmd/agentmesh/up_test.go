package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/fixture"
)

// TestDemoBinary runs the README's first command the way a newcomer does —
// the built binary's `demo` — and checks that it exits 0 and prints the
// sunset folder with the sunsets in it, including camera-named ones that only
// the pixels identify.
func TestDemoBinary(t *testing.T) {
	bin := agentBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "demo")
	cmd.Env = append(cleanEnv(), "NATS_URL=nats://127.0.0.1:1") // the demo must not use it
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"offline planner", "sunset/ (5 files)", "IMG_0042.jpg", "DSC_1893.jpg", "golden_hour_sunset.png", "done"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	folders := text[strings.Index(text, "== folders"):]
	for _, notSunset := range []string{"forest", "night", "snow"} {
		if strings.Contains(strings.ToLower(folders), notSunset) {
			t.Errorf("a %s image went into a folder:\n%s", notSunset, folders)
		}
	}
}

// TestUpListsAgentsAndLeavesNoChildOnCtrlC starts `agentmesh up`, lists the
// agents from a second process, then sends Ctrl-C (SIGINT) and checks the
// exit status and that every child process is gone.
func TestUpListsAgentsAndLeavesNoChildOnCtrlC(t *testing.T) {
	bin := agentBinary(t)
	up := startUp(t, bin, "--replicas", "AnalysisAgent=2")

	out, err := exec.Command(bin, "agents", "--json", "--nats", up.url).CombinedOutput()
	if err != nil {
		t.Fatalf("agents: %v\n%s", err, out)
	}
	var listed []struct {
		Contract struct {
			Name string `json:"name"`
		} `json:"contract"`
		Instances []json.RawMessage `json:"instances"`
	}
	if err := json.Unmarshal(out, &listed); err != nil {
		t.Fatalf("agents --json: %v\n%s", err, out)
	}
	counts := map[string]int{}
	for _, a := range listed {
		counts[a.Contract.Name] = len(a.Instances)
	}
	for _, name := range builtinNames() {
		want := 1
		if name == "AnalysisAgent" {
			want = 2
		}
		if counts[name] != want {
			t.Errorf("%s has %d instances listed, want %d (listed: %v)", name, counts[name], want, counts)
		}
	}

	if err := up.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := up.wait(60 * time.Second); err != nil {
		t.Fatalf("up did not exit 0 after Ctrl-C: %v\n%s", err, up.output())
	}
	assertGone(t, up.children)
}

// TestUpKilledLeavesNoChild kills `agentmesh up` itself with SIGKILL: the
// children must not outlive it.
func TestUpKilledLeavesNoChild(t *testing.T) {
	bin := agentBinary(t)
	up := startUp(t, bin)
	if err := up.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = up.wait(10 * time.Second)
	assertGone(t, up.children)
}

type upProc struct {
	cmd      *exec.Cmd
	url      string
	children []int
	metrics  map[string]string // child name -> metrics URL, with --metrics-addr
	mu       sync.Mutex
	buf      bytes.Buffer
	done     chan error
}

func (u *upProc) output() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.buf.String()
}

func (u *upProc) wait(d time.Duration) error {
	select {
	case err := <-u.done:
		return err
	case <-time.After(d):
		_ = u.cmd.Process.Kill()
		return <-u.done
	}
}

var (
	upURL = regexp.MustCompile(`mesh is up on ((?:nats|tls)://\S+);`)
	// A row of the status table: name, pid, status and, with
	// --metrics-addr, the child's metrics URL.
	upChild = regexp.MustCompile(`^(\S+)\s+(\d+)\s+running(?:\s+(http://\S+/metrics))?$`)
)

// startUp runs `agentmesh up` on a free port in a temporary store and waits
// for its status table.
func startUp(t *testing.T, bin string, args ...string) *upProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"up", "--port", "0", "--store", t.TempDir()}, args...)...)
	cmd.Env = cleanEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	up := &upProc{cmd: cmd, done: make(chan error, 1), metrics: map[string]string{}}
	cmd.Stderr = &syncWriter{u: up}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			up.mu.Lock()
			up.buf.WriteString(line + "\n")
			if m := upChild.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				pid, _ := strconv.Atoi(m[2])
				up.children = append(up.children, pid)
				if m[3] != "" {
					up.metrics[m[1]] = m[3]
				}
			}
			if m := upURL.FindStringSubmatch(line); m != nil {
				up.url = m[1]
				close(ready)
			}
			up.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stdout)
		up.done <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	select {
	case <-ready:
	case err := <-up.done:
		t.Fatalf("up exited early: %v\n%s", err, up.output())
	case <-time.After(90 * time.Second):
		t.Fatalf("up did not report ready:\n%s", up.output())
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.children) < len(builtinNames())+1 {
		t.Fatalf("status table lists %d processes, want at least %d:\n%s", len(up.children), len(builtinNames())+1, up.buf.String())
	}
	return up
}

type syncWriter struct{ u *upProc }

func (s *syncWriter) Write(b []byte) (int, error) {
	s.u.mu.Lock()
	defer s.u.mu.Unlock()
	return s.u.buf.Write(b)
}

// assertGone waits for every pid to disappear.
func assertGone(t *testing.T, pids []int) {
	t.Helper()
	var running int
	if !fixture.Within(30*time.Second, func() bool {
		for _, pid := range pids {
			if alive(pid) {
				running = pid
				return false
			}
		}
		return true
	}) {
		t.Fatalf("child process %d is still running", running)
	}
}

// alive reports whether pid is a live process (zombies count as gone).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	rest := string(stat[bytes.LastIndexByte(stat, ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// cleanEnv is this process's environment without the settings that would
// point a child at another NATS server or an LLM.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "NATS_") || strings.HasPrefix(kv, "OPENAI_") || strings.HasPrefix(kv, "AGENTMESH_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
