package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus/bustest"
)

// TestBoundFlagsAndVariables: --dead-max-age and --stream-max-bytes (or
// their variables) set the dead letters' age and every stream's byte
// limit in place; a command without them leaves them; a bad size is
// refused naming the variable.
func TestBoundFlagsAndVariables(t *testing.T) {
	for _, k := range []string{"AGENTMESH_DEAD_MAX_AGE", "AGENTMESH_STREAM_MAX_BYTES", "AGENTMESH_RUNS_TTL", "AGENTMESH_CONNECT_WAIT"} {
		t.Setenv(k, "")
	}
	srv := bustest.Start(t)
	res := srv.Provision(t)
	ctx := context.Background()
	agents := func(args ...string) (int, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := run(append([]string{"--nats", srv.URL(), "agents"}, args...), &out, &errOut)
		return code, errOut.String()
	}
	dead := func() (time.Duration, int64) {
		t.Helper()
		si, err := res.Dead.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return si.Config.MaxAge, si.Config.MaxBytes
	}
	if code, errOut := agents("--dead-max-age", "2h", "--stream-max-bytes", "64MiB"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if age, n := dead(); age != 2*time.Hour || n != 64<<20 {
		t.Errorf("MESH_DEAD after the flags: max age %s, max bytes %d", age, n)
	}
	agents()
	if age, n := dead(); age != 2*time.Hour || n != 64<<20 {
		t.Errorf("a command without the flags changed MESH_DEAD to %s, %d", age, n)
	}
	t.Setenv("AGENTMESH_STREAM_MAX_BYTES", "0")
	agents()
	if _, n := dead(); n != -1 {
		t.Errorf("max bytes after AGENTMESH_STREAM_MAX_BYTES=0 = %d, want none", n)
	}
	t.Setenv("AGENTMESH_STREAM_MAX_BYTES", "lots")
	if code, errOut := agents(); code == 0 || !strings.Contains(errOut, "AGENTMESH_STREAM_MAX_BYTES") || !strings.Contains(errOut, "512MiB") {
		t.Errorf("a bad size: exit %d: %s", code, errOut)
	}
}
