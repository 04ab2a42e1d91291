package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// `agentmesh task` into a full MESH_TASKS says at once that the task was
// not sent, with the code backlog_full and the stream's limit, not the
// raw NATS error text and not after its timeout.
func TestTaskIntoFullStream(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	names := srv.Names()
	srv.LimitStream(t, names.TasksStream(), 1)
	d := client.NewDispatcher(srv.JetStream(t), names, "test")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("x", "test")}}
	if _, err := d.Dispatch(ctx, "TextAgent", task, client.DispatchMeta{}); err != nil {
		t.Fatal(err)
	}
	// The task's timeout is past the test's deadline: only a refusal ends
	// the command in time.
	_, errOut, code := runCLI(t, srv.URL(), "task", "TextAgent", "--text", "text=hello", "--timeout", "10m")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, errOut)
	}
	t.Logf("stderr: %s", errOut)
	for _, want := range []string{"was not sent to TextAgent", schemas.CodeBacklogFull, names.TasksStream(), "MaxMsgs 1"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q does not say %q", errOut, want)
		}
	}
}
