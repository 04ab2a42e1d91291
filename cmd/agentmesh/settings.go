package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentmesh/agentmesh/bus"
)

// envDuration is a duration flag whose value may come from an environment
// variable; set says whether the flag or the variable gave one.
type envDuration struct {
	v      time.Duration
	set    bool
	env    string
	envErr error
}

func (d *envDuration) String() string { return d.v.String() }
func (d *envDuration) Type() string   { return "duration" }

func (d *envDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a duration of zero or more: write e.g. 168h, 30m or 0", s)
	}
	d.v, d.set = v, true
	return nil
}

// durationFlag registers --name with default def, read from env when the
// variable is set; a bad variable is reported when a command runs.
func durationFlag(f *pflag.FlagSet, name, env string, def time.Duration, usage string) *envDuration {
	d := &envDuration{v: def, env: env}
	d.envErr = envFlag(f, d, name, env, usage)
	return d
}

// envFlag sets v from the variable env when it is set and registers v as
// --name; it returns the error of a bad variable, which a command reports
// when it runs.
func envFlag(f *pflag.FlagSet, v pflag.Value, name, env, usage string) error {
	var err error
	if raw, ok := os.LookupEnv(env); ok && raw != "" {
		if serr := v.Set(raw); serr != nil {
			err = fmt.Errorf("%s=%w", env, serr)
		}
	}
	f.Var(v, name, usage+" (env "+env+")")
	return err
}

// envBytes is a byte-size flag (512MiB, 2GiB, 1000000; 0 for no limit)
// whose value may come from an environment variable; set says whether the
// flag or the variable gave one.
type envBytes struct {
	v      int64
	set    bool
	env    string
	envErr error
}

func (b *envBytes) String() string { return formatBytes(b.v) }
func (b *envBytes) Type() string   { return "bytes" }

func (b *envBytes) Set(s string) error {
	num, unit := s, int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			num, unit = rest, u.n
			break
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || v < 0 || v > math.MaxInt64/unit {
		return fmt.Errorf("%q is not a size of zero or more: write e.g. 512MiB, 2GiB, 1048576 or 0 (no limit)", s)
	}
	b.v, b.set = v*unit, true
	return nil
}

func formatBytes(v int64) string {
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v >= u.n && v%u.n == 0 {
			return strconv.FormatInt(v/u.n, 10) + u.suffix
		}
	}
	return strconv.FormatInt(v, 10)
}

// bytesFlag registers --name with default def, read from env when the
// variable is set; a bad variable is reported when a command runs.
func bytesFlag(f *pflag.FlagSet, name, env string, def int64, usage string) *envBytes {
	b := &envBytes{v: def, env: env}
	b.envErr = envFlag(f, b, name, env, usage)
	return b
}

// byteLimit is bytes' counterpart of retention.
func byteLimit(b *envBytes, owner bool) int64 {
	switch {
	case b.set && b.v == 0:
		return -1 // no limit
	case b.set || owner:
		return b.v
	default:
		return 0
	}
}

// settings are the global flags about the server and the mesh's retention.
type settings struct {
	replicas         int
	connectWait      *envDuration
	taskMaxAge       *envDuration
	runsTTL          *envDuration
	conversationsTTL *envDuration
	requestsMaxAge   *envDuration
	deadMaxAge       *envDuration
	filesMaxAge      *envDuration
	stepsTTL         *envDuration
	streamMaxBytes   *envBytes
	bucketMaxBytes   *envBytes
	filesMaxBytes    *envBytes
}

func (s *settings) register(f *pflag.FlagSet) {
	f.IntVar(&s.replicas, "js-replicas", 0, "JetStream replica count for streams, buckets and the object store, 3 on a cluster (env AGENTMESH_JS_REPLICAS; default: 1 for new ones; existing ones keep theirs)")
	s.connectWait = durationFlag(f, "connect-wait", "AGENTMESH_CONNECT_WAIT", 0,
		"keep retrying the first connection this long while no NATS server answers; 0 tries once")
	s.taskMaxAge = durationFlag(f, "task-max-age", "AGENTMESH_TASK_MAX_AGE", bus.DefaultTasksMaxAge,
		"drop a task no agent instance has taken within this age; 0 keeps tasks until taken")
	s.runsTTL = durationFlag(f, "runs-ttl", "AGENTMESH_RUNS_TTL", bus.DefaultRunsTTL,
		"remove pipeline run state this long after its last change; 0 keeps it forever")
	s.conversationsTTL = durationFlag(f, "conversations-ttl", "AGENTMESH_CONVERSATIONS_TTL", bus.DefaultConversationsTTL,
		"remove a conversation this long after its last turn; 0 keeps it forever")
	s.requestsMaxAge = durationFlag(f, "requests-max-age", "AGENTMESH_REQUESTS_MAX_AGE", bus.DefaultRequestsMaxAge,
		"drop a chat request or pipeline submission no orchestrator has taken within this age; 0 keeps them until taken")
	s.deadMaxAge = durationFlag(f, "dead-max-age", "AGENTMESH_DEAD_MAX_AGE", bus.DefaultDeadMaxAge,
		"remove a dead letter (MESH_DEAD) after this age; 0 keeps them forever")
	s.filesMaxAge = durationFlag(f, "files-max-age", "AGENTMESH_FILES_MAX_AGE", bus.DefaultFilesMaxAge,
		"remove a file or spilled collection from the object store after this age; 0 keeps them forever")
	s.stepsTTL = durationFlag(f, "steps-ttl", "AGENTMESH_STEPS_TTL", bus.DefaultStepsTTL,
		"remove a task's recorded steps (the step journal, mesh_steps) this long after they were written; keep it above --task-max-age plus the agents' timeouts; 0 keeps them forever")
	s.streamMaxBytes = bytesFlag(f, "stream-max-bytes", "AGENTMESH_STREAM_MAX_BYTES", bus.DefaultStreamMaxBytes,
		"byte limit of each stream; a full task or request queue refuses new ones, a full results, events or dead-letter stream drops its oldest; 0 for none")
	s.bucketMaxBytes = bytesFlag(f, "bucket-max-bytes", "AGENTMESH_BUCKET_MAX_BYTES", bus.DefaultBucketMaxBytes,
		"byte limit of each KV bucket (agents, conversations, runs); a full bucket refuses writes; 0 for none")
	s.filesMaxBytes = bytesFlag(f, "files-max-bytes", "AGENTMESH_FILES_MAX_BYTES", bus.DefaultFilesMaxBytes,
		"byte limit of the object store of files and spilled collections; 0 for none")
}

func (s *settings) check() error {
	if err := s.replicasFromEnv(); err != nil {
		return err
	}
	for _, d := range []*envDuration{s.connectWait, s.taskMaxAge, s.runsTTL, s.conversationsTTL, s.requestsMaxAge, s.deadMaxAge, s.filesMaxAge, s.stepsTTL} {
		if d.envErr != nil {
			return d.envErr
		}
	}
	for _, b := range []*envBytes{s.streamMaxBytes, s.bucketMaxBytes, s.filesMaxBytes} {
		if b.envErr != nil {
			return b.envErr
		}
	}
	return nil
}

// replicasFromEnv reads AGENTMESH_JS_REPLICAS when --js-replicas was not
// given.
func (s *settings) replicasFromEnv() error {
	v := os.Getenv("AGENTMESH_JS_REPLICAS")
	if v == "" || s.replicas != 0 {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 5 {
		return fmt.Errorf("AGENTMESH_JS_REPLICAS=%q is not a replica count: use 1 to 5 (3 on a three-node cluster)", v)
	}
	s.replicas = n
	return nil
}

// retention returns the age to provision: what the flag or variable says (0
// meaning no limit), the default when owner (up and server --provision set
// the mesh's retention), or zero, which leaves an existing stream or bucket
// as it is.
func retention(d *envDuration, owner bool) time.Duration {
	switch {
	case d.set && d.v == 0:
		return bus.Forever
	case d.set || owner:
		return d.v
	default:
		return 0
	}
}

// provisionOptions are the options this process provisions the mesh with.
func (a *app) provisionOptions() bus.ProvisionOptions {
	return bus.ProvisionOptions{
		Replicas:         a.replicas,
		TasksMaxAge:      retention(a.taskMaxAge, a.owner),
		RunsTTL:          retention(a.runsTTL, a.owner),
		ConversationsTTL: retention(a.conversationsTTL, a.owner),
		RequestsMaxAge:   retention(a.requestsMaxAge, a.owner),
		DeadMaxAge:       retention(a.deadMaxAge, a.owner),
		FilesMaxAge:      retention(a.filesMaxAge, a.owner),
		StepsTTL:         retention(a.stepsTTL, a.owner),
		StreamMaxBytes:   byteLimit(a.streamMaxBytes, a.owner),
		BucketMaxBytes:   byteLimit(a.bucketMaxBytes, a.owner),
		FilesMaxBytes:    byteLimit(a.filesMaxBytes, a.owner),
	}
}

// serverWait is how long a long-running command (orchestrator, agent) waits
// for its server at start unless --connect-wait says otherwise.
const serverWait = time.Minute

// waitForServer makes the next connect retry for serverWait unless the
// flag or variable set a wait.
func (a *app) waitForServer() {
	if !a.connectWait.set {
		a.connectWait.v = serverWait
	}
}
