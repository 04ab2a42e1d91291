package badinput

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// minCases is the least the catalogue holds (issue 25).
const minCases = 300

// The outcomes a case ends with. A clear error is a coded answer where the
// sender reads it (on its subject, a refusal subject, an HTTP status with a
// coded JSON error, a JSON-RPC error, an MCP tool error); handled is a
// request accepted and served. Silent (no answer), corrupt (an answer
// other than the one documented, or state left half-written) and crash
// (no HTTP answer at all, or the mesh not serving the next good request)
// fail the case.
const (
	outClear   = "clear error"
	outHandled = "handled"
	outSilent  = "silent"
	outCorrupt = "corrupt"
	outCrash   = "crash"
)

// tally counts the cases' outcomes by outcome and by surface, logs them
// and writes them to $AGENTMESH_ARTIFACTS/badinput-outcomes.json once every
// case has run.
type tally struct {
	mu        sync.Mutex
	byOutcome map[string]int
	bySurface map[string]map[string]int
	failed    map[string][]string
}

func newTally(t *testing.T, cs []badCase) *tally {
	tl := &tally{byOutcome: map[string]int{}, bySurface: map[string]map[string]int{}, failed: map[string][]string{}}
	// Parallel subtests end before the parent's cleanup runs.
	t.Cleanup(func() { tl.report(t, len(cs)) })
	return tl
}

// surfaceOf is the part of a case's name before its first slash (for the
// inputs once silent, "silent/task ...", the word after it).
func surfaceOf(name string) string {
	surface, rest, _ := strings.Cut(name, "/")
	if surface == "silent" {
		surface, _, _ = strings.Cut(rest, " ")
	}
	return surface
}

func (tl *tally) add(c badCase, stage string, failed bool) {
	out := stage
	switch {
	case failed:
	case c.handled || (c.call != nil && c.code == ""):
		out = outHandled
	default:
		out = outClear
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.byOutcome[out]++
	surface := surfaceOf(c.name)
	if tl.bySurface[surface] == nil {
		tl.bySurface[surface] = map[string]int{}
	}
	tl.bySurface[surface][out]++
	if failed {
		tl.failed[out] = append(tl.failed[out], c.name)
	}
}

func (tl *tally) report(t *testing.T, cases int) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	ran := 0
	for _, n := range tl.byOutcome {
		ran += n
	}
	if ran == 0 {
		return // a -run that selected no case
	}
	order := []string{outClear, outHandled, outSilent, outCorrupt, outCrash}
	var line []string
	for _, o := range order {
		line = append(line, fmt.Sprintf("%s %d", o, tl.byOutcome[o]))
	}
	t.Logf("catalogue of bad inputs: %d of %d cases ran: %s", ran, cases, strings.Join(line, ", "))
	var surfaces []string
	for s := range tl.bySurface {
		surfaces = append(surfaces, s)
	}
	sort.Strings(surfaces)
	for _, s := range surfaces {
		t.Logf("  %-9s %v", s, tl.bySurface[s])
	}
	for _, o := range []string{outSilent, outCorrupt, outCrash} {
		if n := tl.byOutcome[o]; n > 0 {
			sort.Strings(tl.failed[o])
			t.Errorf("%d cases ended %s (want 0): %q", n, o, tl.failed[o])
		}
	}
	dir := os.Getenv("AGENTMESH_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
		t.Logf("AGENTMESH_ARTIFACTS is not set: the counts go to %s", dir)
	}
	b, err := json.MarshalIndent(map[string]any{
		"cases": cases, "ran": ran, "by_outcome": tl.byOutcome, "by_surface": tl.bySurface, "failed": tl.failed,
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "badinput-outcomes.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("counts written to %s", path)
}

// succeeded checks that a final event reports success: a completed chat
// turn or run, a successful task (whose result it returns).
func succeeded(t *testing.T, msg *nats.Msg) schemas.AgentResult {
	t.Helper()
	if reason := msg.Header.Get(bus.HeaderDeadReason); reason != "" {
		t.Fatalf("refused on %s: %s", msg.Subject, reason)
	}
	ev, err := bus.Decode(msg)
	if err != nil {
		t.Fatalf("final event on %s does not decode: %v", msg.Subject, err)
	}
	switch ev.Type {
	case bus.TypeChatResponded:
		var r schemas.ChatResponse
		if err := ev.DataAs(&r); err != nil || r.State != schemas.ChatCompleted {
			t.Fatalf("chat answer on %s: %s %s %s (%v)", msg.Subject, r.State, r.Code, r.Error, err)
		}
	case bus.TypePipelineCompleted:
		var r schemas.RunEvent
		if err := ev.DataAs(&r); err != nil || r.Status != schemas.RunCompleted {
			t.Fatalf("run on %s: %s %s %s (%v)", msg.Subject, r.Status, r.Code, r.Error, err)
		}
	case bus.TypeTaskFailed, bus.TypeTaskCompleted:
		var r schemas.AgentResult
		if err := ev.DataAs(&r); err != nil || !r.Success {
			t.Fatalf("task result on %s failed: %+v (%v)", msg.Subject, r.Error, err)
		}
		return r
	default:
		t.Fatalf("unexpected final event %s on %s", ev.Type, msg.Subject)
	}
	return schemas.AgentResult{}
}

// checkOutput checks a task's TEXT output "text" is want.
func checkOutput(t *testing.T, r schemas.AgentResult, want string) {
	t.Helper()
	v, ok := r.Outputs["text"]
	var got string
	if !ok || jsonUnmarshal(string(v.Value), &got) != nil || got != want {
		t.Errorf("output text %s, want %q", clip(string(v.Value)), clip(want))
	}
}

// clip shortens an answer for a message.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
