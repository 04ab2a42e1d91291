package bus_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/embedded"
)

// restartable is an embedded server on one store directory that a test can
// stop and start again, as after a crash.
type restartable struct {
	t     *testing.T
	dir   string
	emb   *embedded.Server
	nc    *nats.Conn
	js    jetstream.JetStream
	names bus.Names
}

func (r *restartable) start() {
	r.t.Helper()
	emb, err := embedded.Start(embedded.Options{StoreDir: r.dir})
	if err != nil {
		r.t.Fatal(err)
	}
	r.emb = emb
	if r.nc, err = nats.Connect(emb.URL()); err != nil {
		r.t.Fatal(err)
	}
	if r.js, err = jetstream.New(r.nc); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(r.stop)
}

func (r *restartable) stop() {
	if r.nc != nil {
		r.nc.Close()
	}
	r.emb.Shutdown()
}

// TestProvisionPurgesTasksBelowAckFloor rebuilds what a server crash can
// leave: the consumer's state says the tasks were acknowledged, the stream's
// files still hold them (the stream's files are those from before the acks,
// as if the removals never reached the disk). Provision must remove them,
// and leave a task nobody acknowledged.
func TestProvisionPurgesTasksBelowAckFloor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := &restartable{t: t, dir: t.TempDir(), names: bus.MustNames(bus.DefaultPrefix)}
	r.start()
	if _, err := bus.Provision(ctx, r.js, r.names, bus.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.js.CreateOrUpdateConsumer(ctx, "MESH_TASKS", jetstream.ConsumerConfig{
		Durable: "TextAgent", FilterSubject: "mesh.task.TextAgent", AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"mesh.task.TextAgent", "mesh.task.TextAgent", "mesh.task.TextAgent", "mesh.task.Nobody"} {
		if _, err := r.js.Publish(ctx, subj, []byte("task")); err != nil {
			t.Fatal(err)
		}
	}
	r.stop()
	streamDir := filepath.Join(r.dir, "jetstream", "$G", "streams", "MESH_TASKS", "msgs")
	saved := filepath.Join(t.TempDir(), "msgs")
	if out, err := exec.Command("cp", "-a", streamDir, saved).CombinedOutput(); err != nil {
		t.Fatalf("saving the stream's files: %v %s", err, out)
	}

	r.start()
	cons, err := r.js.Consumer(ctx, "MESH_TASKS", "TextAgent")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	acked := 0
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
		acked++
	}
	if acked != 3 {
		t.Fatalf("acknowledged %d tasks, want 3", acked)
	}
	r.stop()
	if err := os.RemoveAll(streamDir); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", saved, streamDir).CombinedOutput(); err != nil {
		t.Fatalf("restoring the stream's files: %v %s", err, out)
	}

	r.start()
	s, err := r.js.Stream(ctx, "MESH_TASKS")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := r.js.Consumer(ctx, "MESH_TASKS", "TextAgent")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := ci.Info(ctx)
	t.Logf("after the simulated crash: %d tasks stored, first sequence %d, consumer ack floor %d, pending %d",
		s.CachedInfo().State.Msgs, s.CachedInfo().State.FirstSeq, info.AckFloor.Stream, info.NumPending)
	if s.CachedInfo().State.Msgs != 4 {
		t.Skipf("the server itself dropped the acknowledged tasks on restart (%d left): nothing to purge", s.CachedInfo().State.Msgs)
	}
	res, err := bus.Provision(ctx, r.js, r.names, bus.ProvisionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if purged, err := bus.PurgeAcked(ctx, res.Tasks); err != nil || purged != 0 {
		t.Errorf("a second PurgeAcked removed %d (%v); Provision should have left nothing to purge", purged, err)
	}
	si, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if si.State.Msgs != 1 {
		t.Fatalf("%d tasks left, want the one for Nobody", si.State.Msgs)
	}
	if _, err := s.GetLastMsgForSubject(ctx, "mesh.task.Nobody"); err != nil {
		t.Errorf("the unacknowledged task is gone: %v", err)
	}
}
