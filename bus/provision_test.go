package bus_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
)

func allStreamConfigs(t *testing.T, js jetstream.JetStream) map[string]jetstream.StreamConfig {
	t.Helper()
	out := map[string]jetstream.StreamConfig{}
	l := js.ListStreams(context.Background())
	for info := range l.Info() {
		out[info.Config.Name] = info.Config
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestProvisionIdempotent(t *testing.T) {
	srv := bustest.Start(t)
	js := srv.JetStream(t)
	ctx := context.Background()
	n := srv.Names()

	r, err := bus.Provision(ctx, js, n, bus.ProvisionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := allStreamConfigs(t, js)
	for _, name := range []string{"MESH_REQUESTS", "MESH_TASKS", "MESH_RESULTS", "MESH_EVENTS", "MESH_DEAD",
		"KV_mesh_agents", "KV_mesh_conversations", "KV_mesh_runs", "OBJ_mesh_files"} {
		if _, ok := first[name]; !ok {
			t.Errorf("stream %s missing after Provision", name)
		}
	}
	check := func(name string, ret jetstream.RetentionPolicy, subjects ...string) {
		t.Helper()
		c := first[name]
		if c.Retention != ret || !reflect.DeepEqual(c.Subjects, subjects) || c.Replicas != 1 || c.Storage != jetstream.FileStorage {
			t.Errorf("%s: retention %v subjects %v replicas %d storage %v", name, c.Retention, c.Subjects, c.Replicas, c.Storage)
		}
	}
	check("MESH_REQUESTS", jetstream.WorkQueuePolicy, "mesh.chat.request", "mesh.chat.request.client.*", "mesh.pipeline.submit", "mesh.pipeline.submit.client.*",
		"mesh.pipeline.resolve", "mesh.pipeline.resolve.client.*")
	check("MESH_TASKS", jetstream.WorkQueuePolicy, "mesh.task.>")
	check("MESH_RESULTS", jetstream.LimitsPolicy, "mesh.result.>")
	check("MESH_EVENTS", jetstream.LimitsPolicy, "mesh.events.>")
	check("MESH_DEAD", jetstream.LimitsPolicy, "mesh.dead.>")
	if got := first["MESH_RESULTS"].MaxAge; got != 24*time.Hour {
		t.Errorf("MESH_RESULTS max age %s", got)
	}
	if got := first["MESH_EVENTS"].MaxAge; got != 7*24*time.Hour {
		t.Errorf("MESH_EVENTS max age %s", got)
	}
	agents := first["KV_mesh_agents"]
	if !agents.AllowMsgTTL || agents.SubjectDeleteMarkerTTL == 0 || agents.MaxMsgsPerSubject != 1 {
		t.Errorf("agents bucket: allow msg ttl %v, marker ttl %s, history %d", agents.AllowMsgTTL, agents.SubjectDeleteMarkerTTL, agents.MaxMsgsPerSubject)
	}
	if c := first["KV_mesh_conversations"]; c.MaxMsgsPerSubject != 5 || c.MaxMsgSize != 1<<20 {
		t.Errorf("conversations bucket: history %d, max value %d", c.MaxMsgsPerSubject, c.MaxMsgSize)
	}
	if r.Tasks == nil || r.Agents == nil || r.Conversations == nil || r.Runs == nil || r.Files == nil ||
		r.Requests == nil || r.Results == nil || r.Events == nil || r.Dead == nil {
		t.Fatalf("missing handles: %+v", r)
	}

	if _, err := bus.Provision(ctx, js, n, bus.ProvisionOptions{}); err != nil {
		t.Fatalf("second Provision: %v", err)
	}
	second := allStreamConfigs(t, js)
	if !reflect.DeepEqual(first, second) {
		for name := range first {
			if !reflect.DeepEqual(first[name], second[name]) {
				t.Errorf("stream %s changed:\n first  %+v\n second %+v", name, first[name], second[name])
			}
		}
	}
}

func TestProvisionUpdatesTunables(t *testing.T) {
	srv := bustest.Start(t)
	js := srv.JetStream(t)
	ctx := context.Background()
	if _, err := bus.Provision(ctx, js, srv.Names(), bus.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := bus.Provision(ctx, js, srv.Names(), bus.ProvisionOptions{ResultsMaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Results.CachedInfo().Config.MaxAge; got != time.Hour {
		t.Errorf("results max age after update = %s, want 1h", got)
	}
}

func TestProvisionConflictingRetention(t *testing.T) {
	srv := bustest.Start(t)
	js := srv.JetStream(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "MESH_TASKS", Subjects: []string{"mesh.task.>"}, Retention: jetstream.LimitsPolicy}); err != nil {
		t.Fatal(err)
	}
	_, err := bus.Provision(ctx, js, srv.Names(), bus.ProvisionOptions{})
	if !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	for _, want := range []string{"MESH_TASKS", "retention", "Limits", "WorkQueue", "nats stream rm"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestProvisionOverlappingSubjects(t *testing.T) {
	srv := bustest.Start(t)
	js := srv.JetStream(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SQUATTER", Subjects: []string{"mesh.result.>"}}); err != nil {
		t.Fatal(err)
	}
	_, err := bus.Provision(ctx, js, srv.Names(), bus.ProvisionOptions{})
	if !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	for _, want := range []string{"MESH_RESULTS", "SQUATTER", "overlap"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestPutTTLExpires(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	w, err := res.Agents.Watch(ctx, "search.*")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	rev, err := bus.PutTTL(ctx, js, srv.Names().AgentsBucket(), "search.i1", []byte(`{"up":true}`), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rev == 0 {
		t.Error("revision 0")
	}
	if e, err := res.Agents.Get(ctx, "search.i1"); err != nil || string(e.Value()) != `{"up":true}` {
		t.Fatalf("Get right after PutTTL = %v, %v", e, err)
	}

	var sawPut, sawGone bool
	for !sawGone {
		select {
		case e := <-w.Updates():
			if e == nil {
				continue // end of initial values
			}
			switch e.Operation() {
			case jetstream.KeyValuePut:
				sawPut = true
			case jetstream.KeyValueDelete, jetstream.KeyValuePurge:
				sawGone = true
			}
		case <-ctx.Done():
			t.Fatal("watcher saw no delete or purge marker before the deadline")
		}
	}
	if !sawPut {
		t.Error("watcher did not see the put")
	}
	if _, err := res.Agents.Get(ctx, "search.i1"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("Get after expiry: err = %v, want ErrKeyNotFound", err)
	}
}

func TestPutTTLRejectsBadInput(t *testing.T) {
	srv := bustest.Start(t)
	js := srv.JetStream(t)
	ctx := context.Background()
	if _, err := bus.PutTTL(ctx, js, "mesh_agents", "a b", nil, time.Second); !errors.Is(err, bus.ErrInvalidName) {
		t.Errorf("bad key: %v", err)
	}
	if _, err := bus.PutTTL(ctx, js, "mesh_agents", "a", nil, time.Millisecond); !errors.Is(err, bus.ErrInvalidName) {
		t.Errorf("short ttl: %v", err)
	}
}

// A requests stream of a mesh provisioned before mesh.pipeline.resolve
// existed gains the subject; one holding a foreign subject is a conflict.
func TestProvisionAddsNewSubjects(t *testing.T) {
	srv := bustest.Start(t)
	js := srv.JetStream(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "MESH_REQUESTS", Subjects: []string{"mesh.chat.request", "mesh.pipeline.submit"},
		Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	r, err := bus.Provision(ctx, js, srv.Names(), bus.ProvisionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Requests.CachedInfo().Config.Subjects; !slices.Contains(got, "mesh.pipeline.resolve") {
		t.Errorf("subjects after provisioning = %v, want mesh.pipeline.resolve among them", got)
	}
	cfg := r.Requests.CachedInfo().Config
	cfg.Subjects = append(cfg.Subjects, "mesh.other")
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Provision(ctx, js, srv.Names(), bus.ProvisionOptions{}); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("a stream with a foreign subject: err = %v, want ErrConflict", err)
	}
}
