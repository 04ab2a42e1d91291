package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
)

// TestProvisionBoundsEveryResource: every stream, bucket and the object
// store of a new mesh has a byte limit and a max age (dead letters and
// requests included, which had neither), and the work queues refuse new
// messages when full rather than dropping the ones waiting.
func TestProvisionBoundsEveryResource(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	js := srv.JetStream(t)
	want := map[string]struct {
		bytes int64
		age   time.Duration
	}{
		"MESH_REQUESTS":         {bus.DefaultStreamMaxBytes, bus.DefaultRequestsMaxAge},
		"MESH_TASKS":            {bus.DefaultStreamMaxBytes, bus.DefaultTasksMaxAge},
		"MESH_RESULTS":          {bus.DefaultStreamMaxBytes, bus.DefaultResultsMaxAge},
		"MESH_EVENTS":           {bus.DefaultStreamMaxBytes, bus.DefaultEventsMaxAge},
		"MESH_DEAD":             {bus.DefaultStreamMaxBytes, bus.DefaultDeadMaxAge},
		"MESH_SCHEDULES":        {bus.DefaultSchedulesMaxBytes, 0}, // a schedule is kept until removed; each tick has a TTL
		"KV_mesh_agents":        {bus.DefaultBucketMaxBytes, bus.DefaultAgentTTL},
		"KV_mesh_conversations": {bus.DefaultBucketMaxBytes, bus.DefaultConversationsTTL},
		"KV_mesh_runs":          {bus.DefaultBucketMaxBytes, bus.DefaultRunsTTL},
		"KV_mesh_llm":           {bus.DefaultLLMBucketMaxBytes, 0},
		"KV_mesh_steps":         {bus.DefaultStepsBucketMaxBytes, bus.DefaultStepsTTL},
		"KV_mesh_memory":        {bus.DefaultMemoryBucketMaxBytes, 0},
		"KV_mesh_rollouts":      {bus.DefaultRolloutsBucketMaxBytes, 0},
		"OBJ_mesh_files":        {bus.DefaultFilesMaxBytes, bus.DefaultFilesMaxAge},
	}
	got := allStreamConfigs(t, js)
	for name, w := range want {
		c, ok := got[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if c.MaxBytes != w.bytes || c.MaxAge != w.age {
			t.Errorf("%s: max bytes %d, max age %s; want %d and %s", name, c.MaxBytes, c.MaxAge, w.bytes, w.age)
		}
	}
	for _, name := range []string{"MESH_REQUESTS", "MESH_TASKS"} {
		if d := got[name].Discard; d != jetstream.DiscardNew {
			t.Errorf("%s: discard %v, want new (a full queue refuses)", name, d)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d streams, want %d", len(got), len(want))
	}
}

// TestFullWorkQueueRefusesAndKeepsItsTasks: a task queue at its byte limit
// refuses the next task with an error its publisher sees, and keeps the
// ones waiting; a dead-letter stream at its limit drops its oldest.
func TestFullWorkQueueRefusesAndKeepsItsTasks(t *testing.T) {
	srv := bustest.Start(t)
	js := srv.JetStream(t)
	ctx := context.Background()
	r, err := bus.Provision(ctx, js, srv.Names(), bus.ProvisionOptions{StreamMaxBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 1000)
	var refused error
	for i := range 20 {
		if _, err := js.Publish(ctx, fmt.Sprintf("mesh.task.Agent%d", i), body); err != nil {
			refused = err
			break
		}
	}
	if refused == nil {
		t.Fatal("20 KB of tasks went into a queue of 8 KB")
	}
	if m, err := r.Tasks.GetMsg(ctx, 1); err != nil || m.Subject != "mesh.task.Agent0" {
		t.Errorf("the first task: %v %v; want it kept", m, err)
	}
	for i := range 20 {
		if _, err := js.Publish(ctx, "mesh.dead.Agent", body); err != nil {
			t.Fatalf("dead letter %d: %v", i, err)
		}
	}
	if si, err := r.Dead.Info(ctx); err != nil || si.State.Bytes > 8<<10 || si.State.FirstSeq == 1 {
		t.Errorf("dead letters: %+v %v; want the oldest dropped, under 8 KB", si.State, err)
	}
}

// TestProvisionBoundsLeaveOperatorSettings: on resources that exist, a
// Provision without options leaves an operator's byte limits and ages
// alone (and those of resources made before there were any); set ones
// are applied in place, and Forever removes them.
func TestProvisionBoundsLeaveOperatorSettings(t *testing.T) {
	srv := bustest.Start(t)
	js := srv.JetStream(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "MESH_DEAD", Subjects: []string{"mesh.dead.>"}, MaxAge: time.Hour, MaxBytes: 10 << 20,
		Description: "agentmesh tasks that exhausted their deliveries", Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "mesh_files", Description: "agentmesh files and spilled collections"}); err != nil {
		t.Fatal(err)
	}
	provision := func(o bus.ProvisionOptions) (dead jetstream.StreamConfig, files jetstream.StreamConfig) {
		t.Helper()
		if _, err := bus.Provision(ctx, js, srv.Names(), o); err != nil {
			t.Fatal(err)
		}
		c := allStreamConfigs(t, js)
		return c["MESH_DEAD"], c["OBJ_mesh_files"]
	}
	dead, files := provision(bus.ProvisionOptions{})
	if dead.MaxAge != time.Hour || dead.MaxBytes != 10<<20 {
		t.Errorf("MESH_DEAD without options: max age %s, max bytes %d; want the operator's 1h and 10 MiB", dead.MaxAge, dead.MaxBytes)
	}
	if files.MaxAge != 0 || files.MaxBytes != -1 {
		t.Errorf("object store without options: max age %s, max bytes %d; want it left unbounded as it was made", files.MaxAge, files.MaxBytes)
	}
	dead, files = provision(bus.ProvisionOptions{DeadMaxAge: 2 * time.Hour, StreamMaxBytes: 20 << 20, FilesMaxAge: 48 * time.Hour, FilesMaxBytes: 64 << 20})
	if dead.MaxAge != 2*time.Hour || dead.MaxBytes != 20<<20 {
		t.Errorf("MESH_DEAD with options: max age %s, max bytes %d", dead.MaxAge, dead.MaxBytes)
	}
	if files.MaxAge != 48*time.Hour || files.MaxBytes != 64<<20 {
		t.Errorf("object store with options: max age %s, max bytes %d", files.MaxAge, files.MaxBytes)
	}
	dead, files = provision(bus.ProvisionOptions{DeadMaxAge: bus.Forever, StreamMaxBytes: -1, FilesMaxAge: bus.Forever, FilesMaxBytes: -1})
	if dead.MaxAge != 0 || dead.MaxBytes != -1 || files.MaxAge != 0 || files.MaxBytes != -1 {
		t.Errorf("Forever: MESH_DEAD %s %d, files %s %d; want no limits", dead.MaxAge, dead.MaxBytes, files.MaxAge, files.MaxBytes)
	}
}

// TestProvisionExplainsLimitsTheServerCannotHold: byte limits larger than
// the server's store are refused with what to do.
func TestProvisionExplainsLimitsTheServerCannotHold(t *testing.T) {
	srv := bustest.Start(t)
	_, err := bus.Provision(context.Background(), srv.JetStream(t), srv.Names(), bus.ProvisionOptions{StreamMaxBytes: 1 << 60})
	if err == nil {
		t.Fatal("streams of an exabyte each were made")
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || !strings.Contains(err.Error(), "--stream-max-bytes") || !strings.Contains(err.Error(), "max_file_store") {
		t.Errorf("error %v; want the server's, with what to do", err)
	}
}
