package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// retryKV tries the reads and writes of a bucket again for
// bus.TransientWait while they fail transiently (bus.Transient). A write whose answer was lost may have been
// stored: before writing again it reads the key, and a value equal to its
// own at a newer revision is taken as its own write.
type retryKV struct{ jetstream.KeyValue }

// retrying wraps kv (nil stays nil).
func retrying(kv jetstream.KeyValue) jetstream.KeyValue {
	if kv == nil {
		return nil
	}
	return retryKV{kv}
}

// retry is bus.Retry for TransientWait with no report.
func retry[T any](ctx context.Context, op func() (T, error)) (T, error) {
	return bus.Retry(ctx, bus.TransientWait, nil, op)
}

func (k retryKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	return retry(ctx, func() (jetstream.KeyValueEntry, error) { return k.KeyValue.Get(ctx, key) })
}

func (k retryKV) Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return retry(ctx, func() (jetstream.KeyWatcher, error) { return k.KeyValue.Watch(ctx, keys, opts...) })
}

func (k retryKV) ListKeysFiltered(ctx context.Context, filters ...string) (jetstream.KeyLister, error) {
	return retry(ctx, func() (jetstream.KeyLister, error) { return k.KeyValue.ListKeysFiltered(ctx, filters...) })
}

func (k retryKV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	return retry(ctx, func() (uint64, error) { return k.KeyValue.Put(ctx, key, value) })
}

func (k retryKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	tried := false
	return retry(ctx, func() (uint64, error) {
		if tried {
			if rev, mine, err := k.written(ctx, key, value, 0); err != nil || mine {
				return rev, err
			}
		}
		tried = true
		return k.KeyValue.Create(ctx, key, value, opts...)
	})
}

func (k retryKV) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	tried := false
	return retry(ctx, func() (uint64, error) {
		if tried {
			if rev, mine, err := k.written(ctx, key, value, last); err != nil || mine {
				return rev, err
			}
		}
		tried = true
		return k.KeyValue.Update(ctx, key, value, last)
	})
}

// written reads key after a write of value over revision last whose answer
// was lost: mine reports that the key now holds value at a newer revision
// (the write was stored); an error reports a key another writer changed
// (a conflict) or the read failing.
func (k retryKV) written(ctx context.Context, key string, value []byte, last uint64) (rev uint64, mine bool, err error) {
	e, err := k.KeyValue.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		if last == 0 {
			return 0, false, nil // not stored: create it
		}
		return 0, false, fmt.Errorf("%w: %s was deleted", jetstream.ErrKeyRevisionMismatch, key)
	case err != nil:
		return 0, false, err
	case e.Revision() == last:
		return 0, false, nil // not stored: write again
	case bytes.Equal(e.Value(), value):
		return e.Revision(), true, nil
	case last == 0:
		return 0, false, fmt.Errorf("%w: %s", jetstream.ErrKeyExists, key)
	}
	return 0, false, fmt.Errorf("%w: %s is at revision %d, not %d", jetstream.ErrKeyRevisionMismatch, key, e.Revision(), last)
}
