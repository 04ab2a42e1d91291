package benchsuite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/resolvers"
)

// ObjectStore compares the object store resolver's Store and Open with plain
// nats.go ObjectStore Put and Get on the same bucket, for files of size bytes.
func ObjectStore(ctx context.Context, env Env, size int) []Pair {
	content := make([]byte, size)
	r := rand.New(rand.NewChaCha8([32]byte{1}))
	for i := range content {
		content[i] = byte(r.Uint32())
	}
	store := resolvers.NewObjectStore(env.Res.Files)
	raw := env.Res.Files
	label := fmt.Sprintf("%d MiB", size>>20)
	var stored string
	put := Pair{
		ID: "objectstore-put-" + strings.ReplaceAll(label, " ", ""), Name: "object store put " + label, Unit: "file", Baseliner: "nats.go ObjectStore.Put",
		Baseline: func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				name := resolvers.NewFileID()
				if _, err := raw.Put(ctx, jetstream.ObjectMeta{Name: name}, bytes.NewReader(content)); err != nil {
					fail(b, err)
				}
				b.StopTimer()
				_ = raw.Delete(ctx, name)
				b.StartTimer()
			}
		},
		Mesh: func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				ref, err := store.Store(ctx, bytes.NewReader(content), "application/octet-stream", nil)
				if err != nil {
					fail(b, err)
				}
				b.StopTimer()
				_ = raw.Delete(ctx, ref.ID)
				b.StartTimer()
			}
		},
	}
	ensure := func(b *testing.B) string {
		if stored == "" {
			ref, err := store.Store(ctx, bytes.NewReader(content), "", nil)
			if err != nil {
				fail(b, err)
			}
			stored = ref.ID
		}
		return stored
	}
	get := Pair{
		ID: "objectstore-get-" + strings.ReplaceAll(label, " ", ""), Name: "object store get " + label, Unit: "file", Baseliner: "nats.go ObjectStore.Get",
		Baseline: func(b *testing.B) {
			id := ensure(b)
			b.SetBytes(int64(size))
			for b.Loop() {
				rd, err := raw.Get(ctx, id)
				if err != nil {
					fail(b, err)
				}
				if _, err := io.Copy(io.Discard, rd); err != nil {
					fail(b, err)
				}
				rd.Close()
			}
		},
		Mesh: func(b *testing.B) {
			id := ensure(b)
			b.SetBytes(int64(size))
			for b.Loop() {
				rc, _, err := store.Open(ctx, id)
				if err != nil {
					fail(b, err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					fail(b, err)
				}
				rc.Close()
			}
		},
	}
	return []Pair{put, get}
}
