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

// A client's files bucket takes the shared bucket's limits, is made once
// (a second call binds to it, its files kept), and only for a valid
// client name; it needs a provisioned mesh.
func TestProvisionClientFiles(t *testing.T) {
	srv := bustest.Start(t)
	js, names := srv.JetStream(t), srv.Names()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := bus.ProvisionClientFiles(ctx, js, names, "alice"); err == nil {
		t.Fatal("a client's bucket made on a mesh not provisioned")
	}
	if _, err := bus.Provision(ctx, js, names, bus.ProvisionOptions{FilesMaxBytes: 64 << 20, FilesMaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	obs, err := bus.ProvisionClientFiles(ctx, js, names, "alice")
	if err != nil {
		t.Fatal(err)
	}
	st, err := obs.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.(*jetstream.ObjectBucketStatus).StreamInfo().Config
	if st.Bucket() != "mesh_files_alice" || cfg.MaxBytes != 64<<20 || st.TTL() != time.Hour {
		t.Fatalf("alice's bucket %s: max bytes %d, ttl %s; want mesh_files_alice with the shared bucket's 64 MiB and 1h", st.Bucket(), cfg.MaxBytes, st.TTL())
	}
	if _, err := obs.PutString(ctx, "f-kept", "kept"); err != nil {
		t.Fatal(err)
	}
	again, err := bus.ProvisionClientFiles(ctx, js, names, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := again.GetString(ctx, "f-kept"); err != nil || s != "kept" {
		t.Fatalf("after a second provisioning: %q %v", s, err)
	}
	for _, bad := range []string{"", "a.b", "a*", "al ice"} {
		if _, err := bus.ProvisionClientFiles(ctx, js, names, bad); !errors.Is(err, bus.ErrInvalidName) {
			t.Errorf("client %q: %v, want ErrInvalidName", bad, err)
		}
	}
}
