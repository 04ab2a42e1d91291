package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
)

// TestRetentionFlagsAndVariables: a command with --runs-ttl or its variable
// sets the bucket's TTL in place; one without leaves it; 0 lifts it; a bad
// variable is refused naming it.
func TestRetentionFlagsAndVariables(t *testing.T) {
	for _, k := range []string{"AGENTMESH_RUNS_TTL", "AGENTMESH_CONVERSATIONS_TTL", "AGENTMESH_TASK_MAX_AGE", "AGENTMESH_CONNECT_WAIT"} {
		t.Setenv(k, "")
	}
	srv := bustest.Start(t)
	res := srv.Provision(t)
	ctx := context.Background()
	if _, err := res.Runs.Put(ctx, "run-1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	agents := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(append([]string{"--nats", srv.URL(), "agents"}, args...), &out, &errOut); code != 0 {
			t.Fatalf("agents %v: exit %d: %s", args, code, &errOut)
		}
		return errOut.String()
	}
	ttl := func() time.Duration {
		t.Helper()
		st, err := res.Runs.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.TTL()
	}
	agents("--runs-ttl", "48h")
	if got := ttl(); got != 48*time.Hour {
		t.Errorf("runs TTL after --runs-ttl 48h = %s", got)
	}
	agents()
	if got := ttl(); got != 48*time.Hour {
		t.Errorf("a command without the flag changed the TTL to %s", got)
	}
	t.Setenv("AGENTMESH_RUNS_TTL", "0")
	agents()
	if got := ttl(); got != 0 {
		t.Errorf("runs TTL after AGENTMESH_RUNS_TTL=0 = %s, want none", got)
	}
	if _, err := res.Runs.Get(ctx, "run-1"); err != nil {
		t.Errorf("the run's key did not survive the updates: %v", err)
	}
	t.Setenv("AGENTMESH_TASK_MAX_AGE", "30m")
	agents()
	if info, err := res.Tasks.Info(ctx); err != nil || info.Config.MaxAge != 30*time.Minute {
		t.Errorf("MESH_TASKS max age after AGENTMESH_TASK_MAX_AGE=30m: %v %v", info.Config.MaxAge, err)
	}

	t.Setenv("AGENTMESH_RUNS_TTL", "a week")
	var out, errOut bytes.Buffer
	if code := run([]string{"--nats", srv.URL(), "agents"}, &out, &errOut); code == 0 ||
		!strings.Contains(errOut.String(), `AGENTMESH_RUNS_TTL="a week" is not a duration`) {
		t.Errorf("bad variable: exit %d, stderr %q; want it refused naming the variable and value", code, &errOut)
	}
	unset := &envDuration{v: bus.DefaultRunsTTL}
	if got := retention(unset, true); got != bus.DefaultRunsTTL {
		t.Errorf("up / server --provision without a value provision %s, want the default %s", got, bus.DefaultRunsTTL)
	}
	if got := retention(unset, false); got != 0 {
		t.Errorf("other commands without a value provision %s, want 0 (leave the bucket as it is)", got)
	}
}

// AGENTMESH_JS_REPLICAS stands for --js-replicas; a bad value is refused
// naming the variable.
func TestReplicasVariable(t *testing.T) {
	srv := bustest.Start(t)
	t.Setenv("AGENTMESH_JS_REPLICAS", "three")
	var out, errOut bytes.Buffer
	if code := run([]string{"--nats", srv.URL(), "agents"}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), `AGENTMESH_JS_REPLICAS="three" is not a replica count`) {
		t.Errorf("a bad AGENTMESH_JS_REPLICAS: exit %d, stderr %q", code, errOut.String())
	}
	// A single server cannot hold two replicas: the variable reached
	// provisioning, which says so.
	t.Setenv("AGENTMESH_JS_REPLICAS", "2")
	errOut.Reset()
	if code := run([]string{"--nats", srv.URL(), "agents"}, &out, &errOut); code == 0 || !strings.Contains(strings.ToLower(errOut.String()), "replica") {
		t.Errorf("AGENTMESH_JS_REPLICAS=2 on one server: exit %d, stderr %q", code, errOut.String())
	}
}
