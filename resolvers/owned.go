package resolvers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/schemas"
)

// WithStoreName says the store's bucket is a client's own, named name
// (bus.Names.ClientFilesStore): the references it returns name it
// (FileRef.Store). A client of a secure mesh stores and reads its files
// there.
func WithStoreName(name string) Option {
	return func(o *ObjectStore) { o.storeName = name }
}

// WithOwnerBuckets makes the store follow the owner of the work at hand:
// with a client named on the context (schemas.WithOwner, which the agent
// runtime sets from a task's owner extension), Store writes into that
// client's bucket, bucket(owner), and Open, ResolveMetadata,
// UpdateMetadata and Delete look there before the store's own (shared)
// bucket. Handles are opened once and kept. A client with no bucket (a
// plain mesh) keeps using the shared one. The owner, not a reference's
// Store, picks the bucket, so a task cannot make an agent read a file of
// a client other than its owner. Snapshot (and so Files, the search
// agents' catalog) adds the owner's files to the shared bucket's; List,
// Index and Select stay on the shared bucket.
func WithOwnerBuckets(js jetstream.JetStream, bucket func(owner string) string) Option {
	return func(o *ObjectStore) {
		o.owned = &ownedBuckets{js: js, name: bucket, open: map[string]jetstream.ObjectStore{}}
	}
}

// ownedBuckets opens the owners' buckets; a cache with one writer per
// bucket name (the mutex).
type ownedBuckets struct {
	js   jetstream.JetStream
	name func(owner string) string
	mu   sync.Mutex
	open map[string]jetstream.ObjectStore
}

// get returns owner's bucket and its name, or nil when it has none.
func (b *ownedBuckets) get(ctx context.Context, owner string) (jetstream.ObjectStore, string, error) {
	name := b.name(owner)
	b.mu.Lock()
	obs := b.open[name]
	b.mu.Unlock()
	if obs != nil {
		return obs, name, nil
	}
	obs, err := b.js.ObjectStore(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("files bucket %s of client %q: %w", name, owner, err)
	}
	b.mu.Lock()
	b.open[name] = obs
	b.mu.Unlock()
	return obs, name, nil
}

// bucketFor returns the bucket Store writes into for ctx, and its name
// for FileRef.Store.
func (o *ObjectStore) bucketFor(ctx context.Context) (jetstream.ObjectStore, string, error) {
	if owner := schemas.OwnerOf(ctx); owner != "" && o.owned != nil {
		obs, name, err := o.owned.get(ctx, owner)
		if err != nil || obs != nil {
			return obs, name, err
		}
	}
	return o.obs, o.storeName, nil
}

// lookup calls fn with the owner's bucket (WithOwnerBuckets) and, when
// the file is not there, with the store's own.
func (o *ObjectStore) lookup(ctx context.Context, fn func(obs jetstream.ObjectStore, store string) error) error {
	if obs, name, err := o.bucketFor(ctx); err != nil {
		return err
	} else if obs != o.obs {
		err := fn(obs, name)
		if !errors.Is(err, jetstream.ErrObjectNotFound) && !errors.Is(err, jetstream.ErrUpdateMetaDeleted) {
			return err
		}
	}
	return fn(o.obs, o.storeName)
}

// withOwnerFiles adds to set the files of the bucket of the owner on ctx
// (WithOwnerBuckets), listed afresh and sorted in by id, so a search for a
// client's task finds the client's own files too. With none, it is set
// itself, with what searches derived from it.
func (o *ObjectStore) withOwnerFiles(ctx context.Context, set *FileSet) (*FileSet, error) {
	obs, store, err := o.bucketFor(ctx)
	if err != nil || obs == o.obs {
		return set, err
	}
	infos, err := obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return set, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list files of %s: %w", store, err)
	}
	merged := &FileSet{Files: slices.Clone(set.Files)}
	for _, info := range infos {
		if !info.Deleted && !Reserved(info.Name) {
			merged.Files = append(merged.Files, &IndexedFile{Ref: refFromInfo(info, store)})
		}
	}
	if len(merged.Files) == len(set.Files) {
		return set, nil
	}
	slices.SortFunc(merged.Files, func(a, b *IndexedFile) int { return strings.Compare(a.Ref.ID, b.Ref.ID) })
	return merged, nil
}
