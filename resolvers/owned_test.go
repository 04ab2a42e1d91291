package resolvers_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// A store following owners writes a client's task's files into the
// client's bucket and names it in their refs, reads them there and the
// shared bucket's (refs with no store) too, never another client's; with
// no owner, or an owner without a bucket (a plain mesh), it is the shared
// store as before.
func TestOwnerBuckets(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	js, names := srv.JetStream(t), srv.Names()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := bus.ProvisionClientFiles(ctx, js, names, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.ProvisionClientFiles(ctx, js, names, "bob"); err != nil {
		t.Fatal(err)
	}
	store := resolvers.NewObjectStore(res.Files, resolvers.WithOwnerBuckets(js, names.ClientFilesStore))
	put := func(ctx context.Context, s string) schemas.FileRef {
		t.Helper()
		ref, err := store.Store(ctx, strings.NewReader(s), "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	alice, bob, carol := schemas.WithOwner(ctx, "alice"), schemas.WithOwner(ctx, "bob"), schemas.WithOwner(ctx, "carol")

	shared := put(ctx, "shared")
	hers := put(alice, "alice's")
	carols := put(carol, "carol's") // carol has no bucket
	if shared.Store != "" || carols.Store != "" || hers.Store != names.ClientFilesStore("alice") {
		t.Fatalf("stores: shared %q, carol's %q, alice's %q; want \"\", \"\" and %s", shared.Store, carols.Store, hers.Store, names.ClientFilesStore("alice"))
	}
	if _, err := res.Files.GetInfo(ctx, hers.ID); err == nil {
		t.Fatal("alice's file is in the shared bucket")
	}
	for _, c := range []struct {
		ctx  context.Context
		ref  schemas.FileRef
		want string
	}{{alice, hers, "alice's"}, {alice, shared, "shared"}, {ctx, shared, "shared"}, {carol, carols, "carol's"}, {bob, shared, "shared"}} {
		got, err := store.Resolve(c.ctx, c.ref.ID)
		if err != nil || string(got) != c.want {
			t.Errorf("resolve %s as %q: %q %v, want %q", c.ref.ID, schemas.OwnerOf(c.ctx), got, err, c.want)
		}
	}
	if ref, err := store.ResolveMetadata(alice, hers.ID); err != nil || ref.Store != hers.Store {
		t.Errorf("alice's file's metadata: %+v %v", ref, err)
	}
	for _, c := range []context.Context{bob, ctx} {
		if _, err := store.Resolve(c, hers.ID); !errors.Is(err, resolvers.ErrNotFound) {
			t.Errorf("alice's file read as %q: %v, want not found", schemas.OwnerOf(c), err)
		}
	}
	if err := store.Delete(bob, hers.ID); !errors.Is(err, resolvers.ErrNotFound) {
		t.Errorf("alice's file deleted as bob: %v, want not found", err)
	}
	// Tasks of several owners at once share the store (run with -race).
	var wg sync.WaitGroup
	for i := range 8 {
		owner := []context.Context{alice, bob}[i%2]
		wg.Go(func() {
			ref, err := store.Store(owner, strings.NewReader("at once"), "text/plain", nil)
			if err == nil {
				_, err = store.Resolve(owner, ref.ID)
			}
			if err != nil || ref.Store != names.ClientFilesStore(schemas.OwnerOf(owner)) {
				t.Errorf("%s at once: %+v %v", schemas.OwnerOf(owner), ref, err)
			}
		})
	}
	wg.Wait()
	if err := store.Delete(alice, hers.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Resolve(alice, hers.ID); !errors.Is(err, resolvers.ErrNotFound) {
		t.Errorf("after its delete: %v, want not found", err)
	}
}

// A search for a client's task sees the shared files and the client's
// own, in id order; another client's task, or a task with no owner, the
// shared ones only, as the index holds them.
func TestOwnerSnapshot(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	js, names := srv.JetStream(t), srv.Names()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, c := range []string{"alice", "bob"} {
		if _, err := bus.ProvisionClientFiles(ctx, js, names, c); err != nil {
			t.Fatal(err)
		}
	}
	store := resolvers.NewObjectStore(res.Files, resolvers.WithOwnerBuckets(js, names.ClientFilesStore))
	ictx, stop := context.WithCancel(ctx)
	defer stop()
	if err := store.Index(ictx); err != nil {
		t.Fatal(err)
	}
	alice, bob := schemas.WithOwner(ctx, "alice"), schemas.WithOwner(ctx, "bob")
	var shared, hers []string
	for i := range 3 {
		ref, err := store.Store(ctx, strings.NewReader("shared"), "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		shared = append(shared, ref.ID)
		if ref, err = store.Store(alice, strings.NewReader("alice's"), "text/plain", map[string]string{resolvers.MetaFilename: "a" + string(rune('0'+i)) + ".txt"}); err != nil {
			t.Fatal(err)
		}
		hers = append(hers, ref.ID)
	}
	ids := func(set *resolvers.FileSet) []string {
		var out []string
		for _, f := range set.Files {
			out = append(out, f.Ref.ID)
		}
		return out
	}
	base, err := resolvers.Snapshot(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(shared)
	if got := ids(base); !slices.Equal(got, shared) || !base.Kept {
		t.Fatalf("no owner: %v (kept %v), want the index's %v", got, base.Kept, shared)
	}
	for _, c := range []struct {
		ctx  context.Context
		want []string
	}{{alice, slices.Sorted(slices.Values(append(slices.Clone(shared), hers...)))}, {bob, shared}} {
		set, err := resolvers.Snapshot(c.ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(set); !slices.Equal(got, c.want) {
			t.Errorf("%s's task sees %v, want %v", schemas.OwnerOf(c.ctx), got, c.want)
		}
	}
	set, _ := resolvers.Snapshot(alice, store)
	for _, f := range set.Files {
		if slices.Contains(hers, f.Ref.ID) && f.Ref.Store != names.ClientFilesStore("alice") {
			t.Errorf("alice's %s names store %q", f.Ref.ID, f.Ref.Store)
		}
	}
}
