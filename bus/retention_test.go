package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
)

func TestProvisionRetentionDefaults(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	ctx := context.Background()
	if got := res.Tasks.CachedInfo().Config.MaxAge; got != bus.DefaultTasksMaxAge {
		t.Errorf("MESH_TASKS max age %s, want %s", got, bus.DefaultTasksMaxAge)
	}
	for _, kv := range []jetstream.KeyValue{res.Runs, res.Conversations} {
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.TTL() != 7*24*time.Hour {
			t.Errorf("bucket %s TTL %s, want 7 days", st.Bucket(), st.TTL())
		}
	}
}

// TestProvisionRetentionUpdatesExistingBucket starts from a runs bucket as an
// older agentmesh made it (no TTL) holding a run: a Provision without
// options leaves it alone, one with a TTL sets it in place and the run stays,
// Forever lifts it again, and a short TTL really expires keys.
func TestProvisionRetentionUpdatesExistingBucket(t *testing.T) {
	srv := bustest.Start(t)
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	old, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: "mesh_runs", Description: "agentmesh pipeline run state", History: 5, MaxValueSize: 1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := old.Put(ctx, "run-1.header", []byte(`{"status":"completed"}`))
	if err != nil {
		t.Fatal(err)
	}
	provision := func(o bus.ProvisionOptions) (jetstream.KeyValue, time.Duration) {
		t.Helper()
		r, err := bus.Provision(ctx, js, srv.Names(), o)
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.Runs.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return r.Runs, st.TTL()
	}
	if _, ttl := provision(bus.ProvisionOptions{}); ttl != 0 {
		t.Errorf("Provision without options changed the existing bucket's TTL to %s", ttl)
	}
	runs, ttl := provision(bus.ProvisionOptions{RunsTTL: 48 * time.Hour})
	if ttl != 48*time.Hour {
		t.Errorf("TTL after Provision with RunsTTL 48h = %s", ttl)
	}
	if e, err := runs.Get(ctx, "run-1.header"); err != nil || e.Revision() != rev || string(e.Value()) != `{"status":"completed"}` {
		t.Errorf("the run's key after the update: %v, %v; want revision %d kept", e, err, rev)
	}
	if st, _ := runs.Status(ctx); st.History() != 5 {
		t.Errorf("history %d after the update, want 5", st.History())
	}
	if _, ttl := provision(bus.ProvisionOptions{RunsTTL: bus.Forever}); ttl != 0 {
		t.Errorf("TTL after Forever = %s, want none", ttl)
	}

	runs, _ = provision(bus.ProvisionOptions{RunsTTL: time.Second})
	if _, err := runs.Put(ctx, "run-2.header", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := runs.Get(ctx, "run-2.header")
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("a key outlived the bucket's 1s TTL: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestProvisionTasksMaxAgeAndDuplicates(t *testing.T) {
	srv := bustest.Start(t)
	js := srv.JetStream(t)
	ctx := context.Background()
	srv.Provision(t)
	r, err := bus.Provision(ctx, js, srv.Names(), bus.ProvisionOptions{TasksMaxAge: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := r.Tasks.CachedInfo().Config
	if c.MaxAge != 30*time.Second || c.Duplicates > c.MaxAge {
		t.Errorf("MESH_TASKS max age %s duplicates %s; want 30s and a window within it", c.MaxAge, c.Duplicates)
	}
}
