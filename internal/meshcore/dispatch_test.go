package meshcore_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/schemas"
)

// A task dispatched again under its id is stored once, and the dispatcher
// says at debug level under which sequence the stream holds it (what the
// partition test's report needs to tell a task never stored from one
// taken by an agent).
func TestDispatchAgainLogsStoredSequence(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	names := srv.Names()
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var logged strings.Builder
	d := meshcore.NewDispatcher(js, names, "test").WithLogger(slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})))
	task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("x", "test")}}
	meta := meshcore.DispatchMeta{TaskID: "again-1"}
	for range 2 {
		if _, err := d.Dispatch(ctx, "A", task, meta); err != nil {
			t.Fatal(err)
		}
	}
	stream, err := js.Stream(ctx, names.TasksStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("%s holds %d messages, want the task once", names.TasksStream(), info.State.Msgs)
	}
	want := fmt.Sprintf("task=again-1 agent=A stream=%s sequence=%d", names.TasksStream(), info.State.LastSeq)
	if n := strings.Count(logged.String(), "task already stored"); n != 1 || !strings.Contains(logged.String(), want) {
		t.Errorf("logged %d lines of a stored task, want 1 with %q: %s", n, want, logged.String())
	}
}

// A task dispatched with a version is stored on that version's subject,
// mesh.task.<agent>.v.<token>, where only that version's instances take it.
func TestDispatchPinnedToVersion(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	names := srv.Names()
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := meshcore.NewDispatcher(js, names, "test")
	task := schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("x", "test")}}
	if _, err := d.Dispatch(ctx, "A", task, meshcore.DispatchMeta{TaskID: "pinned-1", Version: "2.0.0"}); err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, names.TasksStream())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.GetLastMsgForSubject(ctx, "mesh.task.A.v.2_0_0"); err != nil {
		t.Errorf("no task on mesh.task.A.v.2_0_0: %v", err)
	}
	if _, err := d.Dispatch(ctx, "A", task, meshcore.DispatchMeta{TaskID: "pinned-2", Version: "2.0_0"}); err == nil || !strings.Contains(err.Error(), `"2.0_0"`) {
		t.Errorf("dispatch pinned to 2.0_0: %v; want an error naming the version", err)
	}
}
