package resolvers

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/schemas"
)

// fileIndex is the store's metadata in memory: every file's reference by
// id, and the same sorted by id, rebuilt on the first read after a change.
type fileIndex struct {
	mu     sync.RWMutex
	refs   map[string]schemas.FileRef
	sorted []schemas.FileRef // nil after a change
}

// apply records one object's info: its reference, or its removal.
func (x *fileIndex) apply(info *jetstream.ObjectInfo) {
	if strings.HasPrefix(info.Name, CollectionPrefix) {
		return
	}
	if info.Deleted {
		x.set(info.Name, nil)
		return
	}
	ref := refFromInfo(info)
	x.set(info.Name, &ref)
}

// set records the reference of file id, or its removal when ref is nil.
// A nil index records nothing.
func (x *fileIndex) set(id string, ref *schemas.FileRef) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if ref == nil {
		delete(x.refs, id)
	} else {
		x.refs[id] = *ref
	}
	x.sorted = nil
}

// snapshot is every reference, sorted by id; callers must not change it.
func (x *fileIndex) snapshot() []schemas.FileRef {
	x.mu.RLock()
	s := x.sorted
	x.mu.RUnlock()
	if s != nil {
		return s
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.sorted == nil {
		x.sorted = make([]schemas.FileRef, 0, len(x.refs))
		for _, ref := range x.refs {
			x.sorted = append(x.sorted, ref)
		}
		slices.SortFunc(x.sorted, func(a, b schemas.FileRef) int { return strings.Compare(a.ID, b.ID) })
	}
	return x.sorted
}

// list yields the snapshot; each reference's metadata is the caller's own.
func (x *fileIndex) list() iter.Seq2[schemas.FileRef, error] {
	return func(yield func(schemas.FileRef, error) bool) {
		for _, ref := range x.snapshot() {
			ref.Metadata = maps.Clone(ref.Metadata)
			if !yield(ref, nil) {
				return
			}
		}
	}
}

// Index makes List answer from an in-memory index of the store's metadata,
// kept up to date by watching the store (jetstream ObjectStore.Watch),
// instead of listing the store on every call: a search over every stored
// file then costs no round trip to the server. It returns once the index
// holds every file the store had, and keeps watching until ctx ends; List
// lists the store again after that. Files put, changed or deleted by any
// process show in List as soon as the watch delivers the change (a few
// milliseconds); ResolveMetadata, Open and Resolve always ask the store.
func (o *ObjectStore) Index(ctx context.Context) error {
	w, err := o.obs.Watch(ctx)
	if err != nil {
		return fmt.Errorf("watching the file store: %w", err)
	}
	x := &fileIndex{refs: map[string]schemas.FileRef{}}
	// The initial files, up to the watcher's nil marker.
	for loaded := false; !loaded; {
		select {
		case info, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("watching the file store: the watch ended before the index was loaded")
			}
			if loaded = info == nil; !loaded {
				x.apply(info)
			}
		case <-ctx.Done():
			stopWatch(w)
			return ctx.Err()
		}
	}
	o.index.Store(x)
	go func() {
		defer o.index.CompareAndSwap(x, nil)
		for {
			select {
			case info, ok := <-w.Updates():
				if !ok {
					return
				}
				if info != nil {
					x.apply(info)
				}
			case <-ctx.Done():
				stopWatch(w)
				return
			}
		}
	}()
	return nil
}

// stopWatch stops w and drains its updates, so that the watch's handler,
// which may be blocked handing over an update, can end.
func stopWatch(w jetstream.ObjectWatcher) {
	_ = w.Stop()
	for range w.Updates() {
	}
}
