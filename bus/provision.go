package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

const defaultProvisionTimeout = 30 * time.Second

// errCodeSubjectOverlap is the server's JSStreamSubjectOverlapErr, which the
// client library has no constant for.
const errCodeSubjectOverlap jetstream.ErrorCode = 10065

// ProvisionOptions tune the streams, buckets and object store of the mesh.
// Zero fields take their defaults.
type ProvisionOptions struct {
	Replicas        int                   // default 1; 3 on a clustered JetStream
	Storage         jetstream.StorageType // default file storage
	ResultsMaxAge   time.Duration         // default 24h
	EventsMaxAge    time.Duration         // default 7 days
	AgentTTL        time.Duration         // default 15s: agents bucket TTL and limit marker TTL
	DuplicateWindow time.Duration         // default 2m
}

func (o ProvisionOptions) withDefaults() ProvisionOptions {
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.ResultsMaxAge <= 0 {
		o.ResultsMaxAge = 24 * time.Hour
	}
	if o.EventsMaxAge <= 0 {
		o.EventsMaxAge = 7 * 24 * time.Hour
	}
	if o.AgentTTL <= 0 {
		o.AgentTTL = 15 * time.Second
	}
	if o.AgentTTL < time.Second {
		o.AgentTTL = time.Second // the server's minimum limit marker TTL
	}
	if o.DuplicateWindow <= 0 {
		o.DuplicateWindow = 2 * time.Minute
	}
	return o
}

// Resources are handles on everything Provision made or found.
type Resources struct {
	Requests, Tasks, Results, Events, Dead jetstream.Stream
	Agents, Conversations, Runs            jetstream.KeyValue
	Files                                  jetstream.ObjectStore
}

const (
	stateHistory      = 5
	stateMaxValueSize = 1 << 20
)

// Provision makes the streams, KV buckets and object store of the wire
// contract, or binds to them when they exist, so any process may call it at
// start. On a server that already has them with the same settings it changes
// nothing. Tunable settings that differ (max age, duplicate window, replicas,
// history, value size, TTLs) are updated to the wanted values; settings that
// cannot or must not change (retention, storage, subjects) are an error
// wrapping ErrConflict that names the stream, the field, both values and what
// to do.
func Provision(ctx context.Context, js jetstream.JetStream, n Names, o ProvisionOptions) (*Resources, error) {
	if n.prefix == "" {
		return nil, fmt.Errorf("%w: Names is the zero value: build it with NewNames", ErrInvalidName)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultProvisionTimeout)
		defer cancel()
	}
	o = o.withDefaults()
	var (
		r   Resources
		err error
	)
	streams := []struct {
		dst *jetstream.Stream
		cfg jetstream.StreamConfig
	}{
		{&r.Requests, streamConfig(n.RequestsStream(), "agentmesh chat requests and pipeline submissions", jetstream.WorkQueuePolicy, 0, o, n.ChatRequest(), n.PipelineSubmit())},
		{&r.Tasks, streamConfig(n.TasksStream(), "agentmesh tasks, one subject per agent", jetstream.WorkQueuePolicy, 0, o, n.Tasks())},
		{&r.Results, streamConfig(n.ResultsStream(), "agentmesh task results", jetstream.LimitsPolicy, o.ResultsMaxAge, o, n.Results())},
		{&r.Events, streamConfig(n.EventsStream(), "agentmesh progress events of conversations and runs", jetstream.LimitsPolicy, o.EventsMaxAge, o, n.AllEvents())},
		{&r.Dead, streamConfig(n.DeadStream(), "agentmesh tasks that exhausted their deliveries", jetstream.LimitsPolicy, 0, o, n.DeadAll())},
	}
	for _, s := range streams {
		if *s.dst, err = ensureStream(ctx, js, s.cfg); err != nil {
			return nil, err
		}
	}
	buckets := []struct {
		dst *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
	}{
		{&r.Agents, jetstream.KeyValueConfig{
			Bucket: n.AgentsBucket(), Description: "agentmesh live agent registry",
			History: 1, TTL: o.AgentTTL, LimitMarkerTTL: o.AgentTTL,
			Storage: o.Storage, Replicas: o.Replicas,
		}},
		{&r.Conversations, jetstream.KeyValueConfig{
			Bucket: n.ConversationsBucket(), Description: "agentmesh conversation state",
			History: stateHistory, MaxValueSize: stateMaxValueSize,
			Storage: o.Storage, Replicas: o.Replicas,
		}},
		{&r.Runs, jetstream.KeyValueConfig{
			Bucket: n.RunsBucket(), Description: "agentmesh pipeline run state",
			History: stateHistory, MaxValueSize: stateMaxValueSize,
			Storage: o.Storage, Replicas: o.Replicas,
		}},
	}
	for _, b := range buckets {
		if *b.dst, err = ensureKeyValue(ctx, js, b.cfg); err != nil {
			return nil, err
		}
	}
	r.Files, err = ensureObjectStore(ctx, js, jetstream.ObjectStoreConfig{
		Bucket: n.FilesStore(), Description: "agentmesh files and spilled collections",
		Storage: o.Storage, Replicas: o.Replicas,
	})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

func streamConfig(name, desc string, ret jetstream.RetentionPolicy, maxAge time.Duration, o ProvisionOptions, subjects ...string) jetstream.StreamConfig {
	dup := o.DuplicateWindow
	if maxAge > 0 && dup > maxAge {
		dup = maxAge
	}
	return jetstream.StreamConfig{
		Name:        name,
		Description: desc,
		Subjects:    subjects,
		Retention:   ret,
		MaxAge:      maxAge,
		Storage:     o.Storage,
		Replicas:    o.Replicas,
		Duplicates:  dup,
	}
}

func ensureStream(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) (jetstream.Stream, error) {
	for attempt := 0; ; attempt++ {
		s, err := js.Stream(ctx, want.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			s, err = js.CreateStream(ctx, want)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) && attempt == 0 {
				continue // another process made it first: compare with theirs
			}
			if err != nil {
				return nil, explainCreateStream(ctx, js, want, err)
			}
			return s, nil
		}
		if err != nil {
			return nil, fmt.Errorf("looking up stream %s: %w", want.Name, err)
		}
		have := s.CachedInfo().Config
		if err := streamConflicts(have, want); err != nil {
			return nil, err
		}
		if !streamTunablesEqual(have, want) {
			upd := have
			upd.Description = want.Description
			upd.MaxAge = want.MaxAge
			upd.Duplicates = want.Duplicates
			upd.Replicas = want.Replicas
			if s, err = js.UpdateStream(ctx, upd); err != nil {
				return nil, fmt.Errorf("updating stream %s (max age %s, duplicates %s, replicas %d): %w", want.Name, want.MaxAge, want.Duplicates, want.Replicas, err)
			}
		}
		return s, nil
	}
}

func streamConflicts(have, want jetstream.StreamConfig) error {
	var errs []error
	fix := fmt.Sprintf("remove it (`nats stream rm %s`, losing its messages) or use another --prefix", want.Name)
	if have.Retention != want.Retention {
		errs = append(errs, conflict("stream", want.Name, "retention", have.Retention, want.Retention, fix))
	}
	if have.Storage != want.Storage {
		errs = append(errs, conflict("stream", want.Name, "storage", have.Storage, want.Storage, fix))
	}
	if !sameSet(have.Subjects, want.Subjects) {
		errs = append(errs, conflict("stream", want.Name, "subjects", strings.Join(have.Subjects, ","), strings.Join(want.Subjects, ","), fix))
	}
	return errors.Join(errs...)
}

func conflict(kind, name, field string, have, want any, fix string) error {
	return fmt.Errorf("%w: %s %s exists with %s %v, the mesh needs %v: %s", ErrConflict, kind, name, field, have, want, fix)
}

func streamTunablesEqual(have, want jetstream.StreamConfig) bool {
	return have.MaxAge == want.MaxAge && have.Duplicates == want.Duplicates &&
		have.Replicas == want.Replicas && have.Description == want.Description
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// explainCreateStream turns a subject-overlap error into one naming the stream
// that holds the subjects.
func explainCreateStream(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig, err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeSubjectOverlap {
		for _, subj := range want.Subjects {
			if other, lerr := js.StreamNameBySubject(ctx, subj); lerr == nil && other != "" {
				return fmt.Errorf("%w: creating stream %s: its subjects %s overlap stream %s: remove or change %s (`nats stream info %s`) or use another --prefix", ErrConflict, want.Name, strings.Join(want.Subjects, ","), other, other, other)
			}
		}
		return fmt.Errorf("%w: creating stream %s: its subjects %s overlap an existing stream (%v): find it with `nats stream ls -a` and remove or change it, or use another --prefix", ErrConflict, want.Name, strings.Join(want.Subjects, ","), err)
	}
	return fmt.Errorf("creating stream %s: %w", want.Name, err)
}

func ensureKeyValue(ctx context.Context, js jetstream.JetStream, want jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	for attempt := 0; ; attempt++ {
		kv, err := js.KeyValue(ctx, want.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = js.CreateKeyValue(ctx, want)
			if errors.Is(err, jetstream.ErrBucketExists) && attempt == 0 {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("creating KV bucket %s: %w", want.Bucket, err)
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
		if have.History != want.History || have.TTL != want.TTL || have.LimitMarkerTTL != want.LimitMarkerTTL ||
			kvMaxValue(have.MaxValueSize) != kvMaxValue(want.MaxValueSize) || have.Replicas != want.Replicas ||
			have.Description != want.Description {
			if kv, err = js.UpdateKeyValue(ctx, want); err != nil {
				return nil, fmt.Errorf("updating KV bucket %s (history %d, ttl %s, limit marker ttl %s, max value %d, replicas %d): %w",
					want.Bucket, want.History, want.TTL, want.LimitMarkerTTL, want.MaxValueSize, want.Replicas, err)
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

func ensureObjectStore(ctx context.Context, js jetstream.JetStream, want jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	for attempt := 0; ; attempt++ {
		obs, err := js.ObjectStore(ctx, want.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			obs, err = js.CreateObjectStore(ctx, want)
			if errors.Is(err, jetstream.ErrBucketExists) && attempt == 0 {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("creating object store %s: %w", want.Bucket, err)
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
		if st.Replicas() != want.Replicas || st.Description() != want.Description {
			if obs, err = js.UpdateObjectStore(ctx, want); err != nil {
				return nil, fmt.Errorf("updating object store %s (replicas %d): %w", want.Bucket, want.Replicas, err)
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
	if err != nil {
		return 0, fmt.Errorf("putting key %q in KV bucket %s with TTL %s: %w (the bucket needs a limit marker TTL for per-key TTLs)", key, bucket, ttl, err)
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
