package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// backlogFull checks err is the typed refusal of a full stream.
func backlogFull(t *testing.T, what string, err error, stream string, limit int) {
	t.Helper()
	if !errors.Is(err, client.ErrBacklogFull) {
		t.Fatalf("%s into a full %s: %v, want client.ErrBacklogFull", what, stream, err)
	}
	be, ok := errors.AsType[*bus.BacklogError](err)
	if !ok {
		t.Fatalf("%s: %T is not a *bus.BacklogError", what, err)
	}
	if want := fmt.Sprintf("MaxMsgs %d", limit); be.Stream != stream || be.Limit != want {
		t.Errorf("%s: stream %q limit %q, want %s and %s", what, be.Stream, be.Limit, stream, want)
	}
	if !strings.Contains(err.Error(), schemas.CodeBacklogFull) {
		t.Errorf("%s: %q does not say %s", what, err, schemas.CodeBacklogFull)
	}
}

// Submissions and chat requests into a full MESH_REQUESTS, and tasks into
// a full MESH_TASKS, fail at once with a typed error naming the stream
// and its limit.
func TestSendIntoFullStreamIsBacklogFull(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	names := srv.Names()
	js := srv.JetStream(t)
	srv.LimitStream(t, names.RequestsStream(), 1)
	srv.LimitStream(t, names.TasksStream(), 1)
	// Shorter than bus.TransientWait: a refusal taken for an outage would
	// end with the context, not a BacklogError.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	spec := pipelinespec.PipelineSpec{Name: "p", Steps: []pipelinespec.PipelineStep{{ID: "a", Agent: "A"}}}
	if _, err := client.SubmitPipeline(ctx, js, names, spec, "r-1", "test"); err != nil {
		t.Fatalf("first submission: %v", err)
	}
	_, err := client.SubmitPipeline(ctx, js, names, spec, "r-2", "test")
	backlogFull(t, "a submission", err, names.RequestsStream(), 1)

	ev, _, err := client.NewChatRequest("c-1", "hello", "test")
	if err != nil {
		t.Fatal(err)
	}
	backlogFull(t, "a chat request", client.PublishChatRequest(ctx, js, names, ev), names.RequestsStream(), 1)

	d := client.NewDispatcher(js, names, "test")
	task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("x", "test")}}
	if _, err := d.Dispatch(ctx, "A", task, client.DispatchMeta{}); err != nil {
		t.Fatalf("first task: %v", err)
	}
	_, err = d.Dispatch(ctx, "A", task, client.DispatchMeta{})
	backlogFull(t, "a task", err, names.TasksStream(), 1)
}
