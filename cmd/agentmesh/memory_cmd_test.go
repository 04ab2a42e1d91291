package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/internal/memory"
	"github.com/agentmesh/agentmesh/internal/meshtest"
)

// TestMemoryCommands: memory ls shows a client's remembered facts and no
// other client's, memory rm removes one (and says which when it is not
// there), and a bad command line exits 2.
func TestMemoryCommands(t *testing.T) {
	m := meshtest.New(t)
	url := m.Srv.URL()
	store := memory.New(m.Srv.JetStream(t), m.Srv.Names())
	ctx := context.Background()
	mine, err := store.Remember(ctx, memory.Fact{Identity: "alice", Text: "Alice prefers metric units", Source: "remember"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Remember(ctx, memory.Fact{Identity: "bob", Text: "Bob's team is called Falcon", Source: "remember"}); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runArgs("--nats", url, "memory", "ls", "alice")
	if code != 0 || !strings.Contains(out, "Alice prefers metric units") || !strings.Contains(out, mine.ID) || strings.Contains(out, "Falcon") {
		t.Fatalf("memory ls alice: exit %d, %q %q", code, out, errOut)
	}
	code, out, _ = runArgs("--nats", url, "--json", "memory", "ls")
	var all []memory.Fact
	if code != 0 || json.Unmarshal([]byte(out), &all) != nil || len(all) != 2 {
		t.Errorf("memory ls --json: exit %d, %q; want both facts", code, out)
	}

	code, out, errOut = runArgs("--nats", url, "--json", "memory", "rm", "alice", mine.ID)
	if code != 0 || !strings.Contains(out, mine.ID) {
		t.Fatalf("memory rm: exit %d, %q %q", code, out, errOut)
	}
	if facts, err := store.List(ctx, "alice"); err != nil || len(facts) != 0 {
		t.Errorf("alice's facts after rm: %+v, %v", facts, err)
	}
	if facts, err := store.List(ctx, "bob"); err != nil || len(facts) != 1 {
		t.Errorf("bob's facts after alice's rm: %+v, %v", facts, err)
	}
	code, _, errOut = runArgs("--nats", url, "memory", "rm", "alice", mine.ID)
	if code != 1 || !strings.Contains(errOut, mine.ID) {
		t.Errorf("removing a fact that is gone: exit %d, %q; want 1 naming it", code, errOut)
	}

	for _, args := range [][]string{
		{"memory", "rm", "alice"},                   // neither ids nor --all
		{"memory", "rm", "alice", "x", "--all"},     // both
		{"memory", "ls", "not.a.token"},             // a bad identity
		{"memory", "rm", "alice", "x", "--bogus"},   // an unknown flag
		{"memory", "ls", "alice", "bob"},            // too many arguments
		{"memory", "rm", "not a token", "--all"},    // a bad identity
		{"orchestrator", "--remember-slots", "a.b"}, // a bad slot name
	} {
		if code, _, errOut := runArgs(append([]string{"--nats", url}, args...)...); code != 2 {
			t.Errorf("%s: exit %d (%s), want 2", strings.Join(args, " "), code, errOut)
		}
	}
}
