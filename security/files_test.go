package security_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// clientFiles returns client c's store on its own bucket, as its
// identity opens it.
func clientFiles(t *testing.T, m *secureMesh, c *conn, name string) *resolvers.ObjectStore {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bucket := m.names.ClientFilesStore(name)
	obs, err := c.js.ObjectStore(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	return resolvers.NewObjectStore(obs, resolvers.WithStoreName(bucket))
}

// attempt runs one attack with a short deadline: a request the server
// refuses for permissions gets no answer.
func attempt(fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return fn(ctx)
}

// A client's files are its own: alice stores a file in her bucket;
// mallory, who knows its id and bucket, can neither read it, list the
// bucket nor delete it, through the object store API or the JetStream API
// underneath (direct gets, consumers on its stream, core subscriptions),
// nor read the shared bucket; alice's file is intact afterwards.
func TestAttackFilesOfAnotherClient(t *testing.T) {
	m := startSecure(t)
	m.ClientFiles(t, alice.Name)
	m.ClientFiles(t, mallory.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := m.connect(t, alice)
	mine := clientFiles(t, m, a, alice.Name)
	ref, err := mine.Store(ctx, strings.NewReader("alice's secret"), "text/plain", map[string]string{resolvers.MetaFilename: "secret.txt"})
	if err != nil {
		t.Fatal(err)
	}
	bucket := m.names.ClientFilesStore(alice.Name)
	if ref.Store != bucket {
		t.Fatalf("alice's ref names store %q, want %q", ref.Store, bucket)
	}
	shared, err := resolvers.NewObjectStore(m.res.Files).Store(ctx, strings.NewReader("admin's file"), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}

	mal := m.connect(t, mallory)
	if _, err := clientFiles(t, m, mal, mallory.Name).Store(ctx, strings.NewReader("mallory's own"), "text/plain", nil); err != nil {
		t.Fatalf("mallory stores into her own bucket: %v", err)
	}
	// The object store API, bound to alice's bucket (binding reads only
	// the stream's info).
	theirs, err := mal.js.ObjectStore(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	stolen := resolvers.NewObjectStore(theirs, resolvers.WithStoreName(bucket))
	if err := attempt(func(ctx context.Context) error { _, err := stolen.Resolve(ctx, ref.ID); return err }); err == nil {
		t.Fatal("mallory read alice's file through the object store")
	}
	if err := attempt(func(ctx context.Context) error { _, err := stolen.ResolveMetadata(ctx, ref.ID); return err }); err == nil {
		t.Fatal("mallory read alice's file's metadata")
	}
	if err := attempt(func(ctx context.Context) error { _, err := theirs.List(ctx); return err }); err == nil {
		t.Fatal("mallory listed alice's bucket")
	}
	if err := attempt(func(ctx context.Context) error { return theirs.Delete(ctx, ref.ID) }); err == nil {
		t.Fatal("mallory deleted alice's file")
	}
	if err := attempt(func(ctx context.Context) error { _, err := theirs.PutString(ctx, ref.ID, "overwritten"); return err }); err == nil {
		t.Fatal("mallory overwrote alice's file")
	}
	// The JetStream API underneath.
	stream := "OBJ_" + bucket
	meta := "$O." + bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(ref.ID))
	if _, err := mal.Request("$JS.API.DIRECT.GET."+stream+"."+meta, nil, 2*time.Second); err == nil {
		t.Fatal("mallory got alice's file's metadata by a direct get")
	}
	mal.violation(t, "Publish", "$JS.API.DIRECT.GET."+stream)
	if _, err := mal.Request("$JS.API.STREAM.MSG.GET."+stream, []byte(`{"seq":1}`), 2*time.Second); err == nil {
		t.Fatal("mallory got a message of alice's bucket")
	}
	mal.violation(t, "Publish", "$JS.API.STREAM.MSG.GET."+stream)
	for _, filter := range []string{"$O." + bucket + ".>", ""} {
		cfg := jetstream.OrderedConsumerConfig{}
		if filter != "" {
			cfg.FilterSubjects = []string{filter}
		}
		if err := attempt(func(ctx context.Context) error { _, err := mal.js.OrderedConsumer(ctx, stream, cfg); return err }); err == nil {
			t.Fatalf("mallory made a consumer on alice's bucket (filter %q)", filter)
		}
	}
	if err := attempt(func(ctx context.Context) error {
		_, err := mal.js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{Name: "peek", FilterSubject: "$O." + bucket + ".C.>"})
		return err
	}); err == nil {
		t.Fatal("mallory made a named consumer on alice's bucket")
	}
	if err := attempt(func(ctx context.Context) error {
		s, err := mal.js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		return s.Purge(ctx)
	}); err == nil {
		t.Fatal("mallory purged alice's bucket")
	}
	if _, err := mal.SubscribeSync("$O." + bucket + ".>"); err == nil {
		mal.violation(t, "Subscription", "$O."+bucket)
	}
	// Nor the shared bucket, on a secure mesh: a client keeps its files in its own.
	sharedTheirs, err := mal.js.ObjectStore(ctx, m.names.FilesStore())
	if err != nil {
		t.Fatal(err)
	}
	if err := attempt(func(ctx context.Context) error {
		_, err := resolvers.NewObjectStore(sharedTheirs).Resolve(ctx, shared.ID)
		return err
	}); err == nil {
		t.Fatal("mallory read the shared bucket")
	}

	// Alice's file is intact, and hers to read and delete.
	got, err := mine.Resolve(ctx, ref.ID)
	if err != nil || string(got) != "alice's secret" {
		t.Fatalf("alice reads her file: %q %v", got, err)
	}
	if err := mine.Delete(ctx, ref.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := mine.Resolve(ctx, ref.ID); !errors.Is(err, resolvers.ErrNotFound) {
		t.Fatalf("after alice's delete: %v, want not found", err)
	}
}

// scribe copies the files it is given into one new file, with the store
// an agent process uses: the shared bucket, following each task's owner
// into that client's bucket. It tells the new file's id in its progress.
func scribe(js jetstream.JetStream, m *secureMesh, shared jetstream.ObjectStore) agents.Agent {
	store := resolvers.NewObjectStore(shared, resolvers.WithOwnerBuckets(js, m.names.ClientFilesStore))
	return agents.Func(schemas.AgentContract{
		Name: "Scribe", Capability: schemas.CapTransformation, Description: "copies files into one",
		Inputs:  []schemas.TypedInput{{Name: "files", DataType: schemas.TypeFileIDs, Required: true}},
		Outputs: []schemas.TypedOutput{{Name: "files", DataType: schemas.TypeFileIDs}},
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		fc, err := ec.Files("files")
		if err != nil {
			return schemas.AgentResult{}, err
		}
		var all []string
		for _, id := range fc.IDs() {
			b, err := store.Resolve(ctx, id)
			if err != nil {
				return schemas.AgentResult{}, err
			}
			all = append(all, string(b))
		}
		ref, err := store.Store(ctx, strings.NewReader(strings.Join(all, " + ")), "text/plain", nil)
		if err != nil {
			return schemas.AgentResult{}, err
		}
		agents.ReportProgress(ctx, "stored "+ref.ID+" in "+ref.Store, 100)
		return schemas.AgentResult{Success: true, Outputs: map[string]schemas.TypedValue{
			"files": schemas.FilesValue(schemas.FromIDs("text/plain", ref.ID), "Scribe")}}, nil
	})
}

// startScribe starts a secure mesh where alice and mallory have their
// buckets and the Scribe agent serves, and returns the Scribe's connection.
func startScribe(t *testing.T) (*secureMesh, *conn) {
	m := startSecure(t)
	m.ClientFiles(t, alice.Name)
	m.ClientFiles(t, mallory.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ac := m.connect(t, bus.Identity{Role: bus.RoleAgent, Name: "Scribe"})
	shared, err := ac.js.ObjectStore(ctx, m.names.FilesStore())
	if err != nil {
		t.Fatal(err)
	}
	meshtest.Serve(t, ac.Conn, scribe(ac.js, m, shared), agents.WithHeartbeat(time.Second))
	return m, ac
}

// A run's files are its owner's: alice's pipeline run reads a file of hers
// and a file of the shared bucket (a reference made before buckets had
// owners, with no store), and its agent stores what it makes in alice's
// bucket, which alice downloads and mallory cannot read.
func TestFilesOfARunLandInTheOwnersBucket(t *testing.T) {
	m, ac := startScribe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m.orchestrator(t, "Scribe")

	a, own := m.connect(t, alice), m.names.ForClient(alice.Name)
	mine := clientFiles(t, m, a, alice.Name)
	hers, err := mine.Store(ctx, strings.NewReader("alice's page"), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	old, err := resolvers.NewObjectStore(m.res.Files).Store(ctx, strings.NewReader("a shared page"), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	if old.Store != "" {
		t.Fatalf("a file of the shared bucket names store %q, want none", old.Store)
	}
	const run = "alice-files-run"
	spec := client.NewPipeline("copy").SeedValue("docs", schemas.TypeFileIDs, "text/plain", schemas.FromIDs("text/plain", hers.ID, old.ID)).
		Step("copy", "Scribe").Input("files", "seed.docs").MustBuild()
	if _, err := client.SubmitPipeline(ctx, a.js, own, spec, run, "alice"); err != nil {
		t.Fatal(err)
	}
	var made string
	for _, p := range followRunProgress(ctx, t, a, own, run) {
		if strings.HasPrefix(p, "stored ") {
			made = p
		}
	}
	id, store, ok := strings.Cut(strings.TrimPrefix(made, "stored "), " in ")
	if !ok || store != m.names.ClientFilesStore(alice.Name) {
		t.Fatalf("the Scribe said %q; want a file stored in %s", made, m.names.ClientFilesStore(alice.Name))
	}
	got, err := mine.Resolve(ctx, id)
	if err != nil || string(got) != "alice's page + a shared page" {
		t.Fatalf("alice downloads the run's file %s: %q %v", id, got, err)
	}
	mal := m.connect(t, mallory)
	theirs, err := mal.js.ObjectStore(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if err := attempt(func(ctx context.Context) error {
		_, err := resolvers.NewObjectStore(theirs).Resolve(ctx, id)
		return err
	}); err == nil {
		t.Fatal("mallory read the file of alice's run")
	}
	// The agent's grants cover all it did with alice's bucket.
	if err := ac.Flush(); err != nil { // the server's errors come before its PONG
		t.Fatal(err)
	}
	for len(ac.errs) > 0 {
		t.Errorf("the Scribe's connection: %v", <-ac.errs)
	}
	// Deleting the consumers it reads files with lets it delete no
	// durable whose name it knows: its own (any agent's) on MESH_TASKS.
	if err := attempt(func(ctx context.Context) error { return ac.js.DeleteConsumer(ctx, m.names.TasksStream(), "Scribe") }); err == nil {
		t.Fatal("the Scribe deleted its durable consumer on the tasks stream")
	}
	ac.violation(t, "Publish", "$JS.API.CONSUMER.DELETE."+m.names.TasksStream())
}

// callScribe sends a task for Scribe with files on its direct endpoint
// from c, naming owner (none when ""), signed or not, and returns the
// result.
func callScribe(t *testing.T, m *secureMesh, c *conn, owner string, signed bool, files ...string) schemas.AgentResult {
	t.Helper()
	ev, err := bus.NewEvent(bus.TypeTaskRequested, "test", schemas.TaskRequest{Inputs: map[string]schemas.TypedValue{
		"files": schemas.FilesValue(schemas.FromIDs("text/plain", files...), "test")}})
	if err != nil {
		t.Fatal(err)
	}
	ev.SetExt(bus.ExtOwner, owner)
	subject, err := m.names.Call("Scribe")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := bus.Encode(subject, ev)
	if err != nil {
		t.Fatal(err)
	}
	if signed {
		if err := bus.SignTask(c.Conn, msg); err != nil {
			t.Fatal(err)
		}
	}
	reply, err := c.Conn.RequestMsg(msg, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := bus.Decode(reply)
	if err != nil {
		t.Fatal(err)
	}
	var res schemas.AgentResult
	if err := rev.DataAs(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

// A direct call is owned as a queued task is: alice's own call reads her
// file; mallory's call naming alice as its owner is refused (forbidden),
// and one she sends unsigned is owned by no one, so the agent looks for
// alice's file in the shared bucket only and does not find it.
func TestAttackDirectCallNamingAnotherOwner(t *testing.T) {
	m, _ := startScribe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := m.connect(t, alice)
	hers, err := clientFiles(t, m, a, alice.Name).Store(ctx, strings.NewReader("alice's page"), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}

	if res := callScribe(t, m, a, "", true, hers.ID); !res.Success {
		t.Fatalf("alice's own direct call: %+v", res.Error)
	}
	mal := m.connect(t, mallory)
	res := callScribe(t, m, mal, alice.Name, true, hers.ID)
	if res.Success || res.Error == nil || res.Error.Code != schemas.CodeForbidden {
		t.Fatalf("mallory's signed call naming alice as owner: %+v, want refused forbidden", res)
	}
	res = callScribe(t, m, mal, alice.Name, false, hers.ID)
	if res.Success {
		t.Fatalf("mallory's unsigned call naming alice as owner read alice's file: %+v", res)
	}
	if res.Error == nil || !strings.Contains(res.Error.Message, hers.ID) {
		t.Fatalf("mallory's unsigned call: %+v, want a failure naming the file it could not find", res.Error)
	}
}
