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

// Forever, as a retention option of ProvisionOptions, keeps messages or keys
// with no age limit.
const Forever time.Duration = -1

// Default retention of the mesh's streams and buckets.
const (
	DefaultResultsMaxAge    = 24 * time.Hour
	DefaultEventsMaxAge     = 7 * 24 * time.Hour
	DefaultTasksMaxAge      = time.Hour
	DefaultRunsTTL          = 7 * 24 * time.Hour
	DefaultConversationsTTL = 7 * 24 * time.Hour
	DefaultAgentTTL         = 15 * time.Second
	DefaultDuplicateWindow  = 2 * time.Minute
	DefaultRequestsMaxAge   = 24 * time.Hour
	DefaultDeadMaxAge       = 7 * 24 * time.Hour
	DefaultFilesMaxAge      = 30 * 24 * time.Hour
	DefaultStepsTTL         = 24 * time.Hour
)

// Default byte limits of the mesh's streams, buckets and object store. The
// server reserves each limit in its store when the resource is made, so
// together they must fit in its max_file_store (by default 75% of the free
// disk): 5 streams and 3 buckets of 256 MiB, the LLM and memory buckets'
// 16 MiB each, the step journal's 64 MiB and 2 GiB of files are about
// 4.1 GiB.
const (
	DefaultStreamMaxBytes int64 = 256 << 20 // each stream
	DefaultBucketMaxBytes int64 = 256 << 20 // each KV bucket
	DefaultFilesMaxBytes  int64 = 2 << 30   // the object store

	DefaultSchedulesMaxBytes int64 = 16 << 20 // MESH_SCHEDULES, unless StreamMaxBytes is set
)

// errCodeInsufficientStorage is the server's JSStorageResourcesExceededErr:
// a byte limit more than its store has room for.
const errCodeInsufficientStorage jetstream.ErrorCode = 10047

// ProvisionOptions tune the streams, buckets and object store of the mesh.
//
// A zero field takes its default when Provision creates a resource and leaves
// an existing resource as it is, so a process started without options never
// undoes an operator's settings (nor lowers the replica count of a clustered
// mesh). A set field is applied to existing resources too, in place. Forever
// (any negative age) removes the age limit.
type ProvisionOptions struct {
	Replicas         int                   // default 1; 3 on a clustered JetStream
	Storage          jetstream.StorageType // default file storage
	ResultsMaxAge    time.Duration         // default DefaultResultsMaxAge (24h)
	EventsMaxAge     time.Duration         // default DefaultEventsMaxAge (7 days)
	TasksMaxAge      time.Duration         // default DefaultTasksMaxAge (1h): a task nobody took by then is dropped
	RunsTTL          time.Duration         // default DefaultRunsTTL (7 days): pipeline run state
	ConversationsTTL time.Duration         // default DefaultConversationsTTL (7 days): conversation state
	AgentTTL         time.Duration         // default 15s: agents bucket TTL and limit marker TTL
	DuplicateWindow  time.Duration         // default 2m
	RequestsMaxAge   time.Duration         // default DefaultRequestsMaxAge (24h): a request no orchestrator took by then is dropped
	DeadMaxAge       time.Duration         // default DefaultDeadMaxAge (7 days): dead letters
	FilesMaxAge      time.Duration         // default DefaultFilesMaxAge (30 days): files and spilled collections
	StepsTTL         time.Duration         // default DefaultStepsTTL (24h): the step journal; keep it above a task's life (TasksMaxAge plus its timeout)

	// Byte limits; Forever (any negative value) removes the limit. A full
	// work queue (MESH_REQUESTS, MESH_TASKS) or bucket refuses what is
	// published to it; a full stream of results, events or dead letters
	// drops its oldest messages.
	StreamMaxBytes int64 // default DefaultStreamMaxBytes, each stream
	BucketMaxBytes int64 // default DefaultBucketMaxBytes, each KV bucket
	FilesMaxBytes  int64 // default DefaultFilesMaxBytes, the object store

	// BindOnly looks the resources up and changes nothing: no creation,
	// no update, no purge. Identities of a secure mesh other than admin
	// may not change streams; the server provisions the mesh for them.
	BindOnly bool
}

// setting is one tunable resolved from an option: the value a new resource
// gets, and whether an existing one is changed to it.
type setting struct {
	v   time.Duration
	set bool
}

// age resolves an age option: zero is the default and not enforced, negative
// is no limit (0 on the server).
func age(opt, def time.Duration) setting {
	switch {
	case opt == 0:
		return setting{v: def}
	case opt < 0:
		return setting{v: 0, set: true}
	default:
		return setting{v: opt, set: true}
	}
}

// byteSetting is a byte limit resolved from an option, as setting is an
// age: zero is the default and not enforced, negative is no limit (-1 on
// the server).
type byteSetting struct {
	v   int64
	set bool
}

func byteLimit(opt, def int64) byteSetting {
	switch {
	case opt == 0:
		return byteSetting{v: def}
	case opt < 0:
		return byteSetting{v: -1, set: true}
	default:
		return byteSetting{v: opt, set: true}
	}
}

func (o ProvisionOptions) replicas() (int, bool) {
	if o.Replicas <= 0 {
		return 1, false
	}
	return o.Replicas, true
}

func (o ProvisionOptions) agentTTL() setting {
	s := age(o.AgentTTL, DefaultAgentTTL)
	if s.v < time.Second {
		s.v = time.Second // the server's minimum limit marker TTL; the registry needs one
	}
	return s
}

// Resources are handles on everything Provision made or found.
type Resources struct {
	Requests, Tasks, Results, Events, Dead jetstream.Stream
	Schedules                              jetstream.Stream // nil when bound to a mesh provisioned without it
	Agents, Conversations, Runs            jetstream.KeyValue
	LLM                                    jetstream.KeyValue // budgets and shared rate limits; nil when bound to a mesh without it
	Steps                                  jetstream.KeyValue // the step journal; nil when bound to a mesh without it (agents make it on demand)
	Memory                                 jetstream.KeyValue // facts remembered across conversations; nil when bound to a mesh without it
	Rollouts                               jetstream.KeyValue // agent rollouts (docs/protocol.md); nil when bound to a mesh without it
	Files                                  jetstream.ObjectStore
}

const (
	stateHistory      = 5
	stateMaxValueSize = 1 << 20
)

// Provision makes the streams, KV buckets and object store of the wire
// contract, or binds to them when they exist, so any process may call it at
// start. On a server that already has them it changes only what the options
// set (see ProvisionOptions) and what the mesh needs (history, value size,
// description); such changes are made in place, keeping the data. Settings
// that cannot or must not change (retention, storage, subjects) are an error
// wrapping ErrConflict that names the stream, the field, both values and what
// to do. Provision also removes tasks and requests that a crashed server left
// below their consumer's ack floor (see PurgeAcked).
func Provision(ctx context.Context, js jetstream.JetStream, n Names, o ProvisionOptions) (*Resources, error) {
	if n.prefix == "" {
		return nil, fmt.Errorf("%w: Names is the zero value: build it with NewNames", ErrInvalidName)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultProvisionTimeout)
		defer cancel()
	}
	if o.BindOnly {
		return bind(ctx, js, n)
	}
	var (
		r   Resources
		err error
	)
	streams := []struct {
		dst *jetstream.Stream
		spec
	}{
		{&r.Requests, streamSpec(n.RequestsStream(), "agentmesh chat requests, pipeline submissions and resolutions", jetstream.WorkQueuePolicy, age(o.RequestsMaxAge, DefaultRequestsMaxAge), o, n.Requests()...)},
		{&r.Tasks, streamSpec(n.TasksStream(), "agentmesh tasks, one subject per agent", jetstream.WorkQueuePolicy, age(o.TasksMaxAge, DefaultTasksMaxAge), o, n.Tasks())},
		{&r.Results, streamSpec(n.ResultsStream(), "agentmesh task results", jetstream.LimitsPolicy, age(o.ResultsMaxAge, DefaultResultsMaxAge), o, n.Results())},
		{&r.Events, streamSpec(n.EventsStream(), "agentmesh progress events of conversations and runs", jetstream.LimitsPolicy, age(o.EventsMaxAge, DefaultEventsMaxAge), o, n.AllEvents())},
		{&r.Dead, streamSpec(n.DeadStream(), "agentmesh tasks that exhausted their deliveries", jetstream.LimitsPolicy, age(o.DeadMaxAge, DefaultDeadMaxAge), o, n.DeadAll())},
	}
	streams = append(streams, struct {
		dst *jetstream.Stream
		spec
	}{&r.Schedules, schedulesSpec(n, o)})
	for _, s := range streams {
		if *s.dst, err = ensureStream(ctx, js, s.spec); err != nil {
			return nil, err
		}
	}
	for _, s := range []jetstream.Stream{r.Requests, r.Tasks, r.Schedules} {
		if _, err := PurgeAcked(ctx, s); err != nil {
			return nil, err
		}
	}
	if err := provisionBuckets(ctx, js, n, o, &r); err != nil {
		return nil, err
	}
	rep, setRep := o.replicas()
	filesAge, filesBytes := age(o.FilesMaxAge, DefaultFilesMaxAge), byteLimit(o.FilesMaxBytes, DefaultFilesMaxBytes)
	r.Files, err = ensureObjectStore(ctx, js, objSpec{cfg: jetstream.ObjectStoreConfig{
		Bucket: n.FilesStore(), Description: "agentmesh files and spilled collections",
		Storage: o.Storage, Replicas: rep, TTL: filesAge.v, MaxBytes: filesBytes.v,
	}, replicas: setRep, ttl: filesAge.set, maxBytes: filesBytes.set})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

func provisionBuckets(ctx context.Context, js jetstream.JetStream, n Names, o ProvisionOptions, r *Resources) error {
	rep, setRep := o.replicas()
	agentTTL := o.agentTTL()
	agentsBytes := byteLimit(o.BucketMaxBytes, DefaultBucketMaxBytes)
	buckets := []struct {
		dst *jetstream.KeyValue
		kvSpec
	}{
		{&r.Agents, kvSpec{cfg: jetstream.KeyValueConfig{
			Bucket: n.AgentsBucket(), Description: "agentmesh live agent registry",
			History: 1, TTL: agentTTL.v, LimitMarkerTTL: agentTTL.v, MaxBytes: agentsBytes.v,
			Storage: o.Storage, Replicas: rep,
		}, ttl: agentTTL, markerTTL: agentTTL, replicas: setRep, maxBytes: agentsBytes.set}},
		{&r.Conversations, stateBucket(n.ConversationsBucket(), "agentmesh conversation state", age(o.ConversationsTTL, DefaultConversationsTTL), o)},
		{&r.Runs, stateBucket(n.RunsBucket(), "agentmesh pipeline run state", age(o.RunsTTL, DefaultRunsTTL), o)},
		{&r.LLM, llmBucket(n.LLMBucket(), o)},
		{&r.Steps, stepsBucket(n.StepsBucket(), o)},
		{&r.Memory, memoryBucket(n.MemoryBucket(), o)},
		{&r.Rollouts, rolloutsBucket(n.RolloutsBucket(), o)},
	}
	for _, b := range buckets {
		var err error
		if *b.dst, err = ensureKeyValue(ctx, js, b.kvSpec); err != nil {
			return err
		}
	}
	return nil
}

func stateBucket(name, desc string, ttl setting, o ProvisionOptions) kvSpec {
	rep, setRep := o.replicas()
	maxBytes := byteLimit(o.BucketMaxBytes, DefaultBucketMaxBytes)
	return kvSpec{cfg: jetstream.KeyValueConfig{
		Bucket: name, Description: desc, TTL: ttl.v,
		History: stateHistory, MaxValueSize: stateMaxValueSize, MaxBytes: maxBytes.v,
		Storage: o.Storage, Replicas: rep,
	}, ttl: ttl, replicas: setRep, maxBytes: maxBytes.set}
}

// DefaultLLMBucketMaxBytes bounds the LLM bucket: a few small keys per
// model, provider key, turn, run and client period.
const DefaultLLMBucketMaxBytes int64 = 16 << 20

// llmMarkerTTL lets the ledger's keys (a turn's, a run's, a client's
// period) carry their own TTL; the rate limits and their config have none.
const llmMarkerTTL = time.Minute

// llmBucket is the LLM state bucket: one value per key (a compare-and-set
// counter), per-key TTLs, and a small byte limit.
func llmBucket(name string, o ProvisionOptions) kvSpec {
	rep, setRep := o.replicas()
	return kvSpec{cfg: jetstream.KeyValueConfig{
		Bucket: name, Description: "agentmesh LLM budgets and shared rate limits",
		History: 1, MaxValueSize: 256 << 10, MaxBytes: DefaultLLMBucketMaxBytes, LimitMarkerTTL: llmMarkerTTL,
		Storage: o.Storage, Replicas: rep,
	}, markerTTL: setting{v: llmMarkerTTL, set: true}, replicas: setRep}
}

// ScheduleTickTTL is how long a schedule's tick waits in MESH_SCHEDULES
// for an orchestrator to take it, as a request waits in MESH_REQUESTS:
// a tick no orchestrator took by then is dropped (the server's
// Nats-Schedule-TTL on each fired message).
const ScheduleTickTTL = DefaultRequestsMaxAge

// schedulesSpec is MESH_SCHEDULES: the schedule messages of pipelines
// (mesh.schedule.<name>, kept until removed: no max age) and the ticks the
// server fires from them (mesh.scheduled.<name>, a work queue the
// orchestrator's durable takes, each tick with a TTL). JetStream message
// schedules (nats-server 2.12+) need the schedule and its target in one
// stream, roll-ups on, and no discard-new; MESH_REQUESTS cannot hold them:
// its max age would delete a schedule, and its orchestrator consumer takes
// every subject.
func schedulesSpec(n Names, o ProvisionOptions) spec {
	sp := streamSpec(n.SchedulesStream(), "agentmesh pipeline schedules and the ticks they fire", jetstream.WorkQueuePolicy, setting{}, o, n.Schedules(), n.ScheduleTicks())
	sp.cfg.Discard = jetstream.DiscardOld
	if !sp.maxBytes {
		sp.cfg.MaxBytes = DefaultSchedulesMaxBytes // schedules are few and small; the server reserves the limit
	}
	sp.cfg.AllowMsgSchedules, sp.cfg.AllowRollup, sp.cfg.AllowMsgTTL = true, true, true
	return sp
}

// DefaultStepsBucketMaxBytes bounds the step journal (the steps bucket),
// as DefaultLLMBucketMaxBytes bounds the LLM bucket: BucketMaxBytes does
// not apply. A full journal refuses new records, and the steps that made
// them fail (and are retried).
const DefaultStepsBucketMaxBytes int64 = 64 << 20

// MaxStepValue is the largest result the step journal records: larger
// ones are refused with code step_too_large (schemas.CodeStepTooLarge).
const MaxStepValue = 512 << 10

// stepsBucket is the step journal: one value per key, written once
// (<taskid>.<step>.<n>, see schemas.StepKey), gone after the TTL, which
// outlives the task.
func stepsBucket(name string, o ProvisionOptions) kvSpec {
	rep, setRep := o.replicas()
	ttl := age(o.StepsTTL, DefaultStepsTTL)
	return kvSpec{cfg: jetstream.KeyValueConfig{
		Bucket: name, Description: "agentmesh step journal: recorded results of the agents' steps, by task",
		History: 1, TTL: ttl.v, MaxValueSize: MaxStepValue + 1024, MaxBytes: DefaultStepsBucketMaxBytes,
		Storage: o.Storage, Replicas: rep,
	}, ttl: ttl, replicas: setRep}
}

// EnsureSteps returns the step journal's bucket, making it with the
// default settings when the mesh has none yet (a mesh provisioned before
// it): agents call it the first time a task records a step.
func EnsureSteps(ctx context.Context, js jetstream.JetStream, n Names) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, n.StepsBucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return ensureKeyValue(ctx, js, stepsBucket(n.StepsBucket(), ProvisionOptions{}))
	}
	if err != nil {
		return nil, fmt.Errorf("looking up KV bucket %s: %w", n.StepsBucket(), err)
	}
	return kv, nil
}

// DefaultMemoryBucketMaxBytes bounds the memory bucket, as
// DefaultLLMBucketMaxBytes bounds the LLM bucket: BucketMaxBytes does not
// apply. A full bucket refuses new facts (the remember tool says so to
// the model); `agentmesh memory rm` makes room.
const DefaultMemoryBucketMaxBytes int64 = 16 << 20

// MaxMemoryValue is the largest value of the memory bucket: one fact with
// its metadata (the chat loop keeps a fact's text under 1 KiB).
const MaxMemoryValue = 4 << 10

// memoryBucket holds the facts remembered across conversations: one
// value per key (<identity>.<fact id>), no TTL (a fact stays until it is
// removed), a small byte limit.
func memoryBucket(name string, o ProvisionOptions) kvSpec {
	rep, setRep := o.replicas()
	return kvSpec{cfg: jetstream.KeyValueConfig{
		Bucket: name, Description: "agentmesh memory: facts remembered across conversations, by identity",
		History: 1, MaxValueSize: MaxMemoryValue, MaxBytes: DefaultMemoryBucketMaxBytes,
		Storage: o.Storage, Replicas: rep,
	}, replicas: setRep}
}

// DefaultRolloutsBucketMaxBytes bounds the rollouts bucket: one small
// value per agent being rolled out and one per server.
const DefaultRolloutsBucketMaxBytes int64 = 4 << 20

func rolloutsBucket(name string, o ProvisionOptions) kvSpec {
	rep, setRep := o.replicas()
	return kvSpec{cfg: jetstream.KeyValueConfig{
		Bucket: name, Description: "agentmesh agent rollouts, and the revision each server applied",
		History: 1, MaxValueSize: 4 << 10, MaxBytes: DefaultRolloutsBucketMaxBytes,
		Storage: o.Storage, Replicas: rep,
	}, replicas: setRep}
}

// EnsureRollouts returns the rollouts bucket, making it with the default
// settings when the mesh has none yet (a mesh provisioned before it).
func EnsureRollouts(ctx context.Context, js jetstream.JetStream, n Names) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, n.RolloutsBucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return ensureKeyValue(ctx, js, rolloutsBucket(n.RolloutsBucket(), ProvisionOptions{}))
	}
	return kv, err
}

// EnsureMemory returns the memory bucket, making it with the default
// settings when the mesh has none yet (a mesh provisioned before it).
func EnsureMemory(ctx context.Context, js jetstream.JetStream, n Names) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, n.MemoryBucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return ensureKeyValue(ctx, js, memoryBucket(n.MemoryBucket(), ProvisionOptions{}))
	}
	if err != nil {
		return nil, fmt.Errorf("looking up KV bucket %s: %w", n.MemoryBucket(), err)
	}
	return kv, nil
}

// spec is a stream's configuration for creating it, and which of its
// tunables an existing stream is changed to.
type spec struct {
	cfg                             jetstream.StreamConfig
	maxAge, dup, replicas, maxBytes bool
}

func streamSpec(name, desc string, ret jetstream.RetentionPolicy, maxAge setting, o ProvisionOptions, subjects ...string) spec {
	dup := age(o.DuplicateWindow, DefaultDuplicateWindow)
	rep, setRep := o.replicas()
	maxBytes := byteLimit(o.StreamMaxBytes, DefaultStreamMaxBytes)
	cfg := jetstream.StreamConfig{
		Name:        name,
		Description: desc,
		Subjects:    subjects,
		Retention:   ret,
		MaxAge:      maxAge.v,
		MaxBytes:    maxBytes.v,
		Storage:     o.Storage,
		Replicas:    rep,
		Duplicates:  dup.v,
	}
	if ret == jetstream.WorkQueuePolicy {
		cfg.Discard = jetstream.DiscardNew // a full queue refuses work rather than dropping what waits
	}
	clampDuplicates(&cfg)
	return spec{cfg: cfg, maxAge: maxAge.set, dup: dup.set, replicas: setRep, maxBytes: maxBytes.set}
}

// clampDuplicates keeps the duplicate window within the max age, as the
// server requires.
func clampDuplicates(c *jetstream.StreamConfig) {
	if c.MaxAge > 0 && (c.Duplicates > c.MaxAge || c.Duplicates == 0) {
		c.Duplicates = c.MaxAge
	}
}

// update returns have with the tunables this spec sets.
func (s spec) update(have jetstream.StreamConfig) jetstream.StreamConfig {
	upd := have
	upd.Description = s.cfg.Description
	// Subjects a newer mesh added (mesh.pipeline.resolve) are added; a
	// stream holding others is a conflict (streamConflicts).
	upd.Subjects = s.cfg.Subjects
	if s.maxAge {
		upd.MaxAge = s.cfg.MaxAge
	}
	if s.dup {
		upd.Duplicates = s.cfg.Duplicates
	}
	if s.replicas {
		upd.Replicas = s.cfg.Replicas
	}
	if s.maxBytes {
		upd.MaxBytes, upd.Discard = s.cfg.MaxBytes, s.cfg.Discard
	}
	clampDuplicates(&upd)
	return upd
}

func ensureStream(ctx context.Context, js jetstream.JetStream, sp spec) (jetstream.Stream, error) {
	want := sp.cfg
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
		if upd := sp.update(have); !streamTunablesEqual(have, upd) {
			if s, err = js.UpdateStream(ctx, upd); err != nil {
				return nil, fmt.Errorf("updating stream %s (max age %s, max bytes %d, duplicates %s, replicas %d): %w%s", want.Name, upd.MaxAge, upd.MaxBytes, upd.Duplicates, upd.Replicas, err, storageHint(err))
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
	if !subset(have.Subjects, want.Subjects) {
		errs = append(errs, conflict("stream", want.Name, "subjects", strings.Join(have.Subjects, ","), strings.Join(want.Subjects, ","), fix))
	}
	return errors.Join(errs...)
}

func conflict(kind, name, field string, have, want any, fix string) error {
	return fmt.Errorf("%w: %s %s exists with %s %v, the mesh needs %v: %s", ErrConflict, kind, name, field, have, want, fix)
}

func streamTunablesEqual(have, want jetstream.StreamConfig) bool {
	return have.MaxAge == want.MaxAge && have.Duplicates == want.Duplicates && have.MaxBytes == want.MaxBytes && have.Discard == want.Discard &&
		have.Replicas == want.Replicas && have.Description == want.Description && sameSet(have.Subjects, want.Subjects)
}

// subset reports whether every subject of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
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
	return fmt.Errorf("creating stream %s: %w%s", want.Name, err, storageHint(err))
}

// storageHint explains a byte limit the server has no room for.
func storageHint(err error) string {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != errCodeInsufficientStorage {
		return ""
	}
	return fmt.Sprintf(" (the server reserves each stream's, bucket's and object store's byte limit: by default %d MiB a stream and a bucket and %d MiB of files; "+
		"give the server more room (a larger disk or max_file_store; on a secure mesh the account's --max-store) or lower them with --stream-max-bytes, --bucket-max-bytes and --files-max-bytes)",
		DefaultStreamMaxBytes>>20, DefaultFilesMaxBytes>>20)
}

// bind looks up every resource of the mesh, changing nothing.
func bind(ctx context.Context, js jetstream.JetStream, n Names) (*Resources, error) {
	var r Resources
	missing := func(kind, name string, err error) error {
		return fmt.Errorf("%s %s: %w: the mesh is not provisioned (or this identity may not see it); on a secure mesh the server provisions it (agentmesh server --secure), else run any agentmesh command once with admin credentials", kind, name, err)
	}
	var err error
	for _, s := range []struct {
		dst  *jetstream.Stream
		name string
	}{{&r.Requests, n.RequestsStream()}, {&r.Tasks, n.TasksStream()}, {&r.Results, n.ResultsStream()}, {&r.Events, n.EventsStream()}, {&r.Dead, n.DeadStream()}} {
		if *s.dst, err = js.Stream(ctx, s.name); err != nil {
			return nil, missing("stream", s.name, err)
		}
	}
	for _, b := range []struct {
		dst  *jetstream.KeyValue
		name string
	}{{&r.Agents, n.AgentsBucket()}, {&r.Conversations, n.ConversationsBucket()}, {&r.Runs, n.RunsBucket()}} {
		if *b.dst, err = js.KeyValue(ctx, b.name); err != nil {
			return nil, missing("bucket", b.name, err)
		}
	}
	if r.Files, err = js.ObjectStore(ctx, n.FilesStore()); err != nil {
		return nil, missing("object store", n.FilesStore(), err)
	}
	// So is the schedules stream: a mesh provisioned before it has no
	// schedules (Resources.Schedules is nil).
	if st, err := js.Stream(ctx, n.SchedulesStream()); err == nil {
		r.Schedules = st
	}
	// The LLM bucket is optional: a mesh provisioned before it, or an
	// identity that may not see it, has its model calls outside the shared
	// budgets and rate limits (Resources.LLM is nil).
	if kv, err := js.KeyValue(ctx, n.LLMBucket()); err == nil {
		r.LLM = kv
	}
	if kv, err := js.KeyValue(ctx, n.StepsBucket()); err == nil {
		r.Steps = kv // optional as the LLM bucket is
	}
	if kv, err := js.KeyValue(ctx, n.RolloutsBucket()); err == nil {
		r.Rollouts = kv // optional as the LLM bucket is
	}
	if kv, err := js.KeyValue(ctx, n.MemoryBucket()); err == nil {
		r.Memory = kv // optional as the LLM bucket is
	}
	return &r, nil
}
