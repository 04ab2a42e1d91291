package resolvers

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/schemas"
)

// IndexedFile is one stored file as an index holds it: its reference, and
// what searches derived from that reference (see Derive), kept for as long
// as the file does not change. A change to the file replaces its
// IndexedFile, so nothing derived from an old version survives it.
type IndexedFile struct {
	// Ref is shared by every reader of the index: read it, never change
	// it or its Metadata.
	Ref     schemas.FileRef
	derived sync.Map
}

// Derive returns what build makes of f's reference, built on the first
// call for this version of the file and kept under key (a value of the
// caller's own unexported type, as with context keys) for later calls.
// build must not change the reference. Calls may race; build then runs
// more than once and one result is kept.
func Derive[T any](f *IndexedFile, key any, build func(schemas.FileRef) T) T {
	if v, ok := f.derived.Load(key); ok {
		return v.(T)
	}
	v, _ := f.derived.LoadOrStore(key, build(f.Ref))
	return v.(T)
}

// FileSet is every file of a catalog at one moment, sorted by id, with
// what searches derived from the whole set (see DeriveSet). While an
// ObjectStore watches its store (Index), one FileSet serves every read
// until a file changes.
type FileSet struct {
	// Files are shared by every reader: read them, never change them.
	Files []*IndexedFile
	// Kept is set when the set is an index's, serving every read until a
	// file changes; a set built for one read is not, and what is derived
	// from it is thrown away with it.
	Kept    bool
	derived sync.Map
}

// DeriveSet returns what build makes of the set, built on the first call
// for this set and kept under key (as with Derive) for later calls. Calls
// may race; build then runs more than once and one result is kept.
func DeriveSet[T any](s *FileSet, key any, build func(*FileSet) T) T {
	if v, ok := s.derived.Load(key); ok {
		return v.(T)
	}
	v, _ := s.derived.LoadOrStore(key, build(s))
	return v.(T)
}

// Snapshot returns the files of cat sorted by id: the index's current set
// while cat is an ObjectStore watching its store (Index), so what DeriveSet
// and Derive built is built once per change; otherwise a new set from
// cat.List. An ObjectStore following owners (WithOwnerBuckets) adds, for a
// client's task, the files of the client's bucket, listed afresh.
func Snapshot(ctx context.Context, cat Catalog) (*FileSet, error) {
	set, err := snapshot(ctx, cat)
	if err != nil {
		return nil, err
	}
	if o, ok := cat.(*ObjectStore); ok {
		return o.withOwnerFiles(ctx, set)
	}
	return set, nil
}

// snapshot is Snapshot of cat's own files.
func snapshot(ctx context.Context, cat Catalog) (*FileSet, error) {
	if o, ok := cat.(*ObjectStore); ok {
		if x := o.index.Load(); x != nil {
			return x.snapshot(), nil
		}
	}
	set := &FileSet{}
	for ref, err := range cat.List(ctx) {
		if err != nil {
			return nil, err
		}
		set.Files = append(set.Files, &IndexedFile{Ref: ref})
	}
	// In id order, as an index's: a search ranks equal matches in the
	// order it is given them, and should not depend on having an index.
	slices.SortFunc(set.Files, func(a, b *IndexedFile) int { return strings.Compare(a.Ref.ID, b.Ref.ID) })
	return set, nil
}

// Files yields the files of Snapshot(ctx, cat) one by one.
func Files(ctx context.Context, cat Catalog) iter.Seq2[*IndexedFile, error] {
	return func(yield func(*IndexedFile, error) bool) {
		set, err := Snapshot(ctx, cat)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, f := range set.Files {
			if !yield(f, nil) {
				return
			}
		}
	}
}

// fileIndex is the store's metadata in memory: every file by id, and the
// same as a FileSet, rebuilt on the first read after a change.
type fileIndex struct {
	mu    sync.RWMutex
	store string // FileRef.Store of its files
	files map[string]*IndexedFile
	now   *FileSet // nil after a change
}

// apply records one object's info: its reference, or its removal.
func (x *fileIndex) apply(info *jetstream.ObjectInfo) {
	if Reserved(info.Name) {
		return
	}
	if info.Deleted {
		x.set(info.Name, nil)
		return
	}
	ref := refFromInfo(info, x.store)
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
		delete(x.files, id)
	} else {
		x.files[id] = &IndexedFile{Ref: *ref}
	}
	x.now = nil
}

// snapshot is every file, sorted by id; callers must not change it.
func (x *fileIndex) snapshot() *FileSet {
	x.mu.RLock()
	s := x.now
	x.mu.RUnlock()
	if s != nil {
		return s
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.now == nil {
		files := make([]*IndexedFile, 0, len(x.files))
		for _, f := range x.files {
			files = append(files, f)
		}
		slices.SortFunc(files, func(a, b *IndexedFile) int { return strings.Compare(a.Ref.ID, b.Ref.ID) })
		x.now = &FileSet{Files: files, Kept: true}
	}
	return x.now
}

// list yields the snapshot; each reference's metadata is the caller's own.
func (x *fileIndex) list() iter.Seq2[schemas.FileRef, error] {
	return func(yield func(schemas.FileRef, error) bool) {
		for _, f := range x.snapshot().Files {
			ref := f.Ref
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
	x := &fileIndex{store: o.storeName, files: map[string]*IndexedFile{}}
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

// CatchUp brings the index of cat, when Index keeps one, up to what the
// store holds now: a search that found nothing in an index the watch may
// not have caught up with (files another process stored a moment ago) asks
// the store itself once. It lists the store's metadata, so it is for the
// rare empty answer, not for every search. A store without an index, or
// another catalog, has nothing to catch up.
func CatchUp(ctx context.Context, cat Catalog) error {
	o, ok := cat.(*ObjectStore)
	if !ok {
		return nil
	}
	x := o.index.Load()
	if x == nil {
		return nil
	}
	infos, err := o.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list files: %w", err)
	}
	for _, info := range infos {
		x.apply(info) // the watch delivers the same later: applied again, no change
	}
	return nil
}

// stopWatch stops w and drains its updates, so that the watch's handler,
// which may be blocked handing over an update, can end.
func stopWatch(w jetstream.ObjectWatcher) {
	_ = w.Stop()
	for range w.Updates() {
	}
}
