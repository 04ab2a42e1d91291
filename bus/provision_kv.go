package bus

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// kvSpec is a bucket's configuration for creating it, and which of its
// tunables an existing bucket is changed to. History, value size and
// description are what the mesh needs and are always applied.
type kvSpec struct {
	cfg                jetstream.KeyValueConfig
	ttl, markerTTL     setting
	replicas, maxBytes bool
}

// update returns have with the settings this spec applies.
func (s kvSpec) update(have jetstream.KeyValueConfig) jetstream.KeyValueConfig {
	upd := have
	upd.Description = s.cfg.Description
	upd.History = s.cfg.History
	upd.MaxValueSize = s.cfg.MaxValueSize
	if s.ttl.set {
		upd.TTL = s.cfg.TTL
	}
	if s.markerTTL.set || (s.cfg.LimitMarkerTTL > 0 && have.LimitMarkerTTL == 0) {
		upd.LimitMarkerTTL = s.cfg.LimitMarkerTTL // per-key TTLs need one
	}
	if s.replicas {
		upd.Replicas = s.cfg.Replicas
	}
	if s.maxBytes {
		upd.MaxBytes = s.cfg.MaxBytes
	}
	return upd
}

func kvEqual(a, b jetstream.KeyValueConfig) bool {
	a.MaxValueSize, b.MaxValueSize = kvMaxValue(a.MaxValueSize), kvMaxValue(b.MaxValueSize)
	return reflect.DeepEqual(a, b)
}

func ensureKeyValue(ctx context.Context, js jetstream.JetStream, sp kvSpec) (jetstream.KeyValue, error) {
	want := sp.cfg
	for attempt := 0; ; attempt++ {
		kv, err := js.KeyValue(ctx, want.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = js.CreateKeyValue(ctx, want)
			if errors.Is(err, jetstream.ErrBucketExists) && attempt == 0 {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("creating KV bucket %s: %w%s", want.Bucket, err, storageHint(err))
			}
			return kv, nil
		}
		if err != nil {
			return nil, fmt.Errorf("looking up KV bucket %s: %w", want.Bucket, err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading KV bucket %s: %w", want.Bucket, err)
		}
		have := st.Config()
		if have.Storage != want.Storage {
			return nil, conflict("KV bucket", want.Bucket, "storage", have.Storage, want.Storage,
				fmt.Sprintf("remove it (`nats kv rm %s`, losing its keys) or use another --prefix", want.Bucket))
		}
		if upd := sp.update(have); !kvEqual(have, upd) {
			if kv, err = js.UpdateKeyValue(ctx, upd); err != nil {
				return nil, fmt.Errorf("updating KV bucket %s (history %d, ttl %s, limit marker ttl %s, max value %d, max bytes %d, replicas %d): %w%s",
					want.Bucket, upd.History, upd.TTL, upd.LimitMarkerTTL, upd.MaxValueSize, upd.MaxBytes, upd.Replicas, err, storageHint(err))
			}
		}
		return kv, nil
	}
}

func kvMaxValue(v int32) int32 {
	if v <= 0 {
		return -1
	}
	return v
}

// objSpec is the object store's configuration for creating it, and which
// of its tunables an existing one is changed to.
type objSpec struct {
	cfg                     jetstream.ObjectStoreConfig
	replicas, ttl, maxBytes bool
}

// ensureObjectStore makes or binds the object store, changing an existing
// one's tunables that sp sets.
func ensureObjectStore(ctx context.Context, js jetstream.JetStream, sp objSpec) (jetstream.ObjectStore, error) {
	want := sp.cfg
	for attempt := 0; ; attempt++ {
		obs, err := js.ObjectStore(ctx, want.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			obs, err = js.CreateObjectStore(ctx, want)
			if errors.Is(err, jetstream.ErrBucketExists) && attempt == 0 {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("creating object store %s: %w%s", want.Bucket, err, storageHint(err))
			}
			return obs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("looking up object store %s: %w", want.Bucket, err)
		}
		st, err := obs.Status(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading object store %s: %w", want.Bucket, err)
		}
		if st.Storage() != want.Storage {
			return nil, conflict("object store", want.Bucket, "storage", st.Storage(), want.Storage,
				fmt.Sprintf("remove it (`nats object rm %s`, losing its files) or use another --prefix", want.Bucket))
		}
		have := st.(*jetstream.ObjectBucketStatus).StreamInfo().Config
		if !sp.replicas {
			want.Replicas = st.Replicas()
		}
		if !sp.ttl {
			want.TTL = st.TTL()
		}
		if !sp.maxBytes {
			want.MaxBytes = have.MaxBytes
		}
		if st.Replicas() != want.Replicas || st.Description() != want.Description || st.TTL() != want.TTL || have.MaxBytes != want.MaxBytes {
			if obs, err = js.UpdateObjectStore(ctx, want); err != nil {
				return nil, fmt.Errorf("updating object store %s (replicas %d, ttl %s, max bytes %d): %w%s", want.Bucket, want.Replicas, want.TTL, want.MaxBytes, err, storageHint(err))
			}
		}
		return obs, nil
	}
}

// PutTTL writes value under key in a KV bucket with its own time to live,
// after which the key is removed and watchers see a purge marker. The bucket
// must have a limit marker TTL (the agents bucket has). It returns the
// revision.
func PutTTL(ctx context.Context, js jetstream.JetStream, bucket, key string, value []byte, ttl time.Duration) (uint64, error) {
	if ttl < time.Second {
		return 0, fmt.Errorf("%w: TTL %s for key %q in bucket %s is below the server's minimum of 1s", ErrInvalidName, ttl, key, bucket)
	}
	if err := validateKVKey(key); err != nil {
		return 0, fmt.Errorf("bucket %s: %w", bucket, err)
	}
	ack, err := js.Publish(ctx, "$KV."+bucket+"."+key, value, jetstream.WithMsgTTL(ttl))
	if api, ok := errors.AsType[*jetstream.APIError](err); ok && !transientAPI(api) {
		return 0, fmt.Errorf("putting key %q in KV bucket %s with TTL %s: %w (the bucket needs a limit marker TTL for per-key TTLs)", key, bucket, ttl, err)
	}
	if err != nil { // no server answered: nothing to say about the bucket
		return 0, fmt.Errorf("putting key %q in KV bucket %s with TTL %s: %w", key, bucket, ttl, err)
	}
	return ack.Sequence, nil
}

func validateKVKey(key string) error {
	if key == "" || key[0] == '.' || key[len(key)-1] == '.' {
		return fmt.Errorf("%w: KV key %q: must be non-empty and not start or end with '.'", ErrInvalidName, key)
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if isWordByte(c) || c == '/' || c == '=' || c == '.' {
			continue
		}
		return fmt.Errorf("%w: KV key %q has %s at byte %d: use letters, digits, '-', '_', '/', '=' and '.'", ErrInvalidName, key, describeByte(key, i), i)
	}
	return nil
}
