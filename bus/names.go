package bus

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmesh/agentmesh/schemas"
)

// DefaultPrefix is the prefix of every subject, stream and bucket name when
// none is configured.
const DefaultPrefix = "mesh"

const (
	maxPrefixLen    = 32
	maxAgentNameLen = 64
	maxTokenLen     = 128
)

// Names builds the subjects, stream names and bucket names of the wire
// contract for one prefix. The zero value is not usable; build it with
// NewNames.
type Names struct {
	prefix string
	upper  string
	client string // ForClient: the client whose request subjects these are
}

// NewNames returns the names for prefix ("" means DefaultPrefix). The prefix
// becomes the first subject token and part of stream and bucket names, so it
// may hold only ASCII letters, digits, '-' and '_'.
func NewNames(prefix string) (Names, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if err := validateStrict("prefix", prefix, maxPrefixLen); err != nil {
		return Names{}, err
	}
	return Names{prefix: prefix, upper: strings.ToUpper(prefix)}, nil
}

// MustNames is NewNames that panics on a bad prefix; for constants and tests.
func MustNames(prefix string) Names {
	n, err := NewNames(prefix)
	if err != nil {
		panic(err)
	}
	return n
}

// Prefix returns the prefix, e.g. "mesh".
func (n Names) Prefix() string { return n.prefix }

func (n Names) subj(parts ...string) string {
	return n.prefix + "." + strings.Join(parts, ".")
}

// Task returns the subject an agent takes its tasks from: mesh.task.<agent>.
func (n Names) Task(agent string) (string, error) {
	if err := ValidateAgentName(agent); err != nil {
		return "", err
	}
	return n.subj("task", agent), nil
}

// TaskVersion returns mesh.task.<agent>.v.<token>, the subject of the
// tasks of one version of agent: those pinned to it and its share of a
// rollout (docs/protocol.md, "Versions and rollouts"). token is
// VersionToken(version).
func (n Names) TaskVersion(agent, version string) (string, error) {
	if err := ValidateAgentName(agent); err != nil {
		return "", err
	}
	tok, err := VersionToken(version)
	if err != nil {
		return "", err
	}
	return n.subj("task", agent, "v", tok), nil
}

// TaskVersions returns mesh.task.<agent>.v.*, the tasks of every version
// of agent.
func (n Names) TaskVersions(agent string) string { return n.subj("task", agent, "v", "*") }

// VersionConsumer returns the durable consumer of version token tok of
// agent: <agent>__v_<token> (a consumer name may hold no '.'; agent names
// may hold '_' but the version part is marked by the double '_').
func VersionConsumer(agent, tok string) string { return agent + "__v_" + tok }

// ShadowResult returns mesh.result.<agent>.shadow.<taskID>, where an
// instance answers the shadow copy of a task (a rollout in shadow mode):
// recorded in the results stream for the comparison, read by no caller.
func (n Names) ShadowResult(agent, taskID string) string {
	return n.subj("result", agent, "shadow", taskID)
}

// RolloutsBucket returns the KV bucket of agent rollouts, e.g.
// mesh_rollouts: one key per agent (the rollout) and one per server
// that applied it (applied.<server>).
func (n Names) RolloutsBucket() string { return n.prefix + "_rollouts" }

// VersionToken returns the subject token of an agent version: the version
// with each '.' written '_', e.g. "1.2.0" is "1_2_0" (schemas.VersionToken
// has the rule). A version no token can carry is an error wrapping
// ErrInvalidName that names the value.
func VersionToken(version string) (string, error) {
	tok, err := schemas.VersionToken(version)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidName, err)
	}
	return tok, nil
}

// Tasks returns the subject of every task: mesh.task.>.
func (n Names) Tasks() string { return n.subj("task", ">") }

// Result returns mesh.result.<agent>.<taskID>, where agent answers a task
// sent to it without a replyto (a direct call, a chat tool call). Every
// result subject starts with mesh.result.<agent>., the agent the task went
// to: on a secure mesh only that agent's identity may publish there, so the
// subject proves who answered. Check agent with ValidateAgentName and the id
// with ValidateToken when they come from outside.
func (n Names) Result(agent, taskID string) string { return n.subj("result", agent, taskID) }

// AgentResults returns mesh.result.<agent>.>, every subject agent may
// publish a result on. An agent refuses a task whose replyto is elsewhere.
func (n Names) AgentResults(agent string) string { return n.subj("result", agent, ">") }

// Results returns the subject of every result: mesh.result.>.
func (n Names) Results() string { return n.subj("result", ">") }

// ClientResult returns mesh.result.<agent>.client.<client>.<taskID>, the
// replyto a client names to read its direct call's result where only it
// (and the agent, to publish) may.
func (n Names) ClientResult(agent, client, taskID string) string {
	return n.subj("result", agent, "client", client, taskID)
}

// ClientResults returns mesh.result.*.client.<client>.>, every result of
// client's direct calls.
func (n Names) ClientResults(client string) string {
	return n.subj("result", "*", "client", client, ">")
}

// CallResult returns mesh.result.<callee>.agent.<caller>.<taskID>, the
// replyto of an agent-to-agent call: callee answers there and only agent
// caller (on a secure mesh) may read it.
func (n Names) CallResult(callee, caller, taskID string) string {
	return n.subj("result", callee, "agent", caller, taskID)
}

// CallResults returns mesh.result.*.agent.<caller>.>, every result of
// agent caller's calls.
func (n Names) CallResults(caller string) string {
	return n.subj("result", "*", "agent", caller, ">")
}

// OrchestratorResult returns mesh.result.<agent>.orchestrator.<id>, where
// agent answers a task of pipeline run id for the orchestrator.
func (n Names) OrchestratorResult(agent, id string) string {
	return n.subj("result", agent, "orchestrator", id)
}

// OrchestratorResults returns mesh.result.*.orchestrator.>.
func (n Names) OrchestratorResults() string { return n.subj("result", "*", "orchestrator", ">") }

// ResultAgent returns the agent a result subject belongs to (its third
// token: mesh.result.<agent>....), or "" when subject is not a result
// subject of this prefix.
func (n Names) ResultAgent(subject string) string {
	rest, ok := strings.CutPrefix(subject, n.subj("result", ""))
	if !ok {
		return ""
	}
	agent, _, ok := strings.Cut(rest, ".")
	if !ok || ValidateAgentName(agent) != nil {
		return ""
	}
	return agent
}

// Events returns mesh.events.<id>.<kind>, where id names a conversation or
// run. For the names of a client (ForClient) it is
// mesh.events.<id>.<kind>.<client>: the events of what that client owns
// (docs/protocol.md, "Owners of runs and conversations"), the only ones a
// secure mesh lets it read. The orchestrator publishes the events of a run
// or conversation on ForClient(owner).Events, so the owner is a subject
// token of its own that NATS permissions can match.
func (n Names) Events(id, kind string) string { return n.owned(n.subj("events", id, kind)) }

// EventsOf returns mesh.events.<id>.>, every event of one conversation or
// run, owned or not; for the names of a client, mesh.events.<id>.*.<client>,
// every event of it the client owns.
func (n Names) EventsOf(id string) string {
	if n.client != "" {
		return n.subj("events", id, "*", n.client)
	}
	return n.subj("events", id, ">")
}

// EventsKind returns the subjects of the events of kind of id, owned by
// any client or by none: mesh.events.<id>.<kind> and
// mesh.events.<id>.<kind>.*; for the names of a client, only its own,
// mesh.events.<id>.<kind>.<client>. id may be "*".
func (n Names) EventsKind(id, kind string) []string {
	if n.client != "" {
		return []string{n.Events(id, kind)}
	}
	return []string{n.Events(id, kind), n.Events(id, kind) + ".*"}
}

// AllEvents returns mesh.events.>; for the names of a client,
// mesh.events.*.*.<client>, every event of what it owns.
func (n Names) AllEvents() string {
	if n.client != "" {
		return n.EventsOf("*")
	}
	return n.subj("events", ">")
}

// Deltas returns mesh.delta.<id>: the text a model is writing for the
// conversation id, piece by piece, on core NATS (no stream holds it). For
// the names of a client it is mesh.delta.<id>.<client>, the text of a
// conversation (or run, or task) that client owns.
func (n Names) Deltas(id string) string { return n.owned(n.subj("delta", id)) }

// AllDeltas returns mesh.delta.>; for the names of a client,
// mesh.delta.*.<client>.
func (n Names) AllDeltas() string {
	if n.client != "" {
		return n.Deltas("*")
	}
	return n.subj("delta", ">")
}

// DeltasOf returns the subjects of the text of id, owned by any client or
// by none: mesh.delta.<id> and mesh.delta.<id>.*; for the names of a
// client, only its own, mesh.delta.<id>.<client>.
func (n Names) DeltasOf(id string) []string {
	if n.client != "" {
		return []string{n.Deltas(id)}
	}
	return []string{n.Deltas(id), n.Deltas(id) + ".*"}
}

// owned appends the client of names made by ForClient to subject.
func (n Names) owned(subject string) string {
	if n.client == "" {
		return subject
	}
	return subject + "." + n.client
}

// Announce returns mesh.registry.announce.<agent>.
func (n Names) Announce(agent string) (string, error) {
	if err := ValidateAgentName(agent); err != nil {
		return "", err
	}
	return n.subj("registry", "announce", agent), nil
}

// Announcements returns mesh.registry.announce.>.
func (n Names) Announcements() string { return n.subj("registry", "announce", ">") }

// Depart returns mesh.registry.depart.<agent>.
func (n Names) Depart(agent string) (string, error) {
	if err := ValidateAgentName(agent); err != nil {
		return "", err
	}
	return n.subj("registry", "depart", agent), nil
}

// Departures returns mesh.registry.depart.>.
func (n Names) Departures() string { return n.subj("registry", "depart", ">") }

// RegistryQuery returns mesh.registry.query.
func (n Names) RegistryQuery() string { return n.subj("registry", "query") }

// ChatRequest returns mesh.chat.request, or for the names of a client
// (ForClient) mesh.chat.request.client.<client>.
func (n Names) ChatRequest() string { return n.request("chat", "request") }

// PipelineSubmit returns mesh.pipeline.submit, or for the names of a
// client mesh.pipeline.submit.client.<client>.
func (n Names) PipelineSubmit() string { return n.request("pipeline", "submit") }

// PipelineResolve returns mesh.pipeline.resolve, where a person's answer
// to an approval or input step goes, or for the names of a client
// mesh.pipeline.resolve.client.<client>.
func (n Names) PipelineResolve() string { return n.request("pipeline", "resolve") }

func (n Names) request(parts ...string) string {
	if n.client == "" {
		return n.subj(parts...)
	}
	return n.subj(append(parts, "client", n.client)...)
}

// ForClient returns the names of client c: its requests (ChatRequest,
// PipelineSubmit, PipelineResolve) go on <request subject>.client.<c>. A
// secure mesh lets client c publish requests only there, so the subject,
// which the server vouches for, tells the orchestrator who sent a request
// and so who owns the run or conversation it starts. The events and deltas
// of what c owns (Events, EventsOf, AllEvents, Deltas, AllDeltas) end in
// .<c>, the only ones a secure mesh lets c read; the orchestrator and
// agents publish on ForClient(owner)'s. "" is the plain names again.
func (n Names) ForClient(c string) Names {
	n.client = c
	return n
}

// Client returns the client of names made by ForClient, else "".
func (n Names) Client() string { return n.client }

// Requests returns the subjects of the requests stream: each request
// subject, and its form for any client (<subject>.client.*).
func (n Names) Requests() []string {
	plain := n.ForClient("")
	var out []string
	for _, s := range []string{plain.ChatRequest(), plain.PipelineSubmit(), plain.PipelineResolve()} {
		out = append(out, s, s+".client.*")
	}
	return out
}

// SplitRequest returns the plain request subject of subject (ChatRequest,
// PipelineSubmit or PipelineResolve of names without a client) and the
// client it names: "" for the plain subject itself. A subject that is no
// request subject is returned as it is, with no client.
func (n Names) SplitRequest(subject string) (plain, client string) {
	for _, s := range []string{n.subj("chat", "request"), n.subj("pipeline", "submit"), n.subj("pipeline", "resolve")} {
		if c, ok := strings.CutPrefix(subject, s+".client."); ok && c != "" && !strings.Contains(c, ".") {
			return s, c
		}
	}
	return subject, ""
}

// Control returns mesh.control.<agent>, the subject of cancellations.
func (n Names) Control(agent string) (string, error) {
	if err := ValidateAgentName(agent); err != nil {
		return "", err
	}
	return n.subj("control", agent), nil
}

// Call returns mesh.call.<agent>, the subject of an agent's micro endpoint:
// the direct call path (core request-reply, no stream).
func (n Names) Call(agent string) (string, error) {
	if err := ValidateAgentName(agent); err != nil {
		return "", err
	}
	return n.subj("call", agent), nil
}

// Dead returns mesh.dead.<agent>.
func (n Names) Dead(agent string) (string, error) {
	if err := ValidateAgentName(agent); err != nil {
		return "", err
	}
	return n.subj("dead", agent), nil
}

// DeadRefused returns mesh.dead.<agent>.refused, where the agent posts,
// on a secure mesh, the refusal of a task it can answer on no result
// subject (see RefusalNotice): every identity may read it.
func (n Names) DeadRefused(agent string) (string, error) {
	if err := ValidateAgentName(agent); err != nil {
		return "", err
	}
	return n.subj("dead", agent, "refused"), nil
}

// DeadRefusedAll returns mesh.dead.*.refused.
func (n Names) DeadRefusedAll() string { return n.subj("dead", "*", "refused") }

// DeadAll returns mesh.dead.>.
func (n Names) DeadAll() string { return n.subj("dead", ">") }

// Schedule returns mesh.schedule.<name>, the subject of a pipeline
// schedule: one message holding the schedule (the Nats-Schedule header)
// and the submission it fires. Check name with ValidateToken.
func (n Names) Schedule(name string) string { return n.subj("schedule", name) }

// Schedules returns mesh.schedule.*, every schedule's subject.
func (n Names) Schedules() string { return n.subj("schedule", "*") }

// ScheduleTick returns mesh.scheduled.<name>, where the server puts a copy
// of schedule name's submission at each time it fires; the orchestrator
// consumes it.
func (n Names) ScheduleTick(name string) string { return n.subj("scheduled", name) }

// ScheduleTicks returns mesh.scheduled.*, every schedule's ticks.
func (n Names) ScheduleTicks() string { return n.subj("scheduled", "*") }

// ScheduleOfTick returns the schedule name a tick subject
// (mesh.scheduled.<name>) belongs to, or "" when subject is none.
func (n Names) ScheduleOfTick(subject string) string {
	name, ok := strings.CutPrefix(subject, n.subj("scheduled")+".")
	if !ok || strings.Contains(name, ".") {
		return ""
	}
	return name
}

// ScheduledRunID is the run id of the tick of schedule name stored at
// stream sequence seq at time at: <name>-<at, UTC, to the second>-<seq>.
// A tick delivered twice (an orchestrator stopped before acknowledging
// it) names the same run, which starts once.
func ScheduledRunID(name string, at time.Time, seq uint64) string {
	return name + "-" + at.UTC().Format("20060102T150405Z") + "-" + strconv.FormatUint(seq, 10)
}

// SchedulesStream returns e.g. MESH_SCHEDULES, the stream of pipeline
// schedules and their ticks.
func (n Names) SchedulesStream() string { return n.upper + "_SCHEDULES" }

// RequestsStream returns the name of the requests stream, e.g. MESH_REQUESTS.
func (n Names) RequestsStream() string { return n.upper + "_REQUESTS" }

// TasksStream returns e.g. MESH_TASKS.
func (n Names) TasksStream() string { return n.upper + "_TASKS" }

// ResultsStream returns e.g. MESH_RESULTS.
func (n Names) ResultsStream() string { return n.upper + "_RESULTS" }

// EventsStream returns e.g. MESH_EVENTS.
func (n Names) EventsStream() string { return n.upper + "_EVENTS" }

// DeadStream returns e.g. MESH_DEAD.
func (n Names) DeadStream() string { return n.upper + "_DEAD" }

// AgentsBucket returns the live registry KV bucket, e.g. mesh_agents.
func (n Names) AgentsBucket() string { return n.prefix + "_agents" }

// ConversationsBucket returns e.g. mesh_conversations.
func (n Names) ConversationsBucket() string { return n.prefix + "_conversations" }

// RunsBucket returns e.g. mesh_runs.
func (n Names) RunsBucket() string { return n.prefix + "_runs" }

// LLMBucket returns the KV bucket of the language models' shared state,
// e.g. mesh_llm: the budget ledger and the rate limits of every process
// (package llm, docs/llm.md).
func (n Names) LLMBucket() string { return n.prefix + "_llm" }

// StepsBucket returns the KV bucket of the step journal, e.g. mesh_steps:
// the recorded results of the agents' steps, by task
// (docs/durability.md).
func (n Names) StepsBucket() string { return n.prefix + "_steps" }

// MemoryBucket returns the KV bucket of the facts remembered across
// conversations, e.g. mesh_memory: one key per fact,
// <identity>.<fact id> (docs/knowledge.md, "Memory").
func (n Names) MemoryBucket() string { return n.prefix + "_memory" }

// KVPut returns the subject a write of key in bucket is published on:
// $KV.<bucket>.<key>. Publishing there with JetStream (and the
// Nats-Expected-Last-Subject-Sequence header for a compare-and-set) is a KV
// put that can be pipelined with other publishes.
func (n Names) KVPut(bucket, key string) string { return "$KV." + bucket + "." + key }

// FilesStore returns the object store name, e.g. mesh_files: the shared
// bucket of files no client owns (admin's, plain submissions', samples,
// knowledge bases, spilled collections).
func (n Names) FilesStore() string { return n.prefix + "_files" }

// ClientFilesStore returns the object store of client c's files on a
// secure mesh, e.g. mesh_files_alice: what c stores and what agents and
// the orchestrator store for its runs, conversations and direct calls. A
// client name holds only ASCII letters, digits, '-' and '_'
// (Identity.Validate), so it is a valid bucket and stream name as it is,
// and no two clients share one. Admin makes it when issuing c's
// credentials (ProvisionClientFiles).
func (n Names) ClientFilesStore(c string) string { return n.prefix + "_files_" + c }

// ValidateAgentName reports whether name can name an agent. An agent name is a
// subject token (mesh.task.<agent>), a JetStream durable consumer name, part
// of a KV key (<agent>.<instance>) and a NATS micro service name, so it must
// be 1 to 64 ASCII letters, digits, '-' or '_'.
func ValidateAgentName(name string) error {
	return validateStrict("agent name", name, maxAgentNameLen)
}

// ValidateToken reports whether value, an id of the given kind ("task id",
// "conversation id", ...), can be used as one subject token and as a KV key:
// 1 to 128 ASCII letters, digits, '-', '_' or '='.
func ValidateToken(kind, value string) error {
	if kind == "" {
		kind = "id"
	}
	if value == "" {
		return fmt.Errorf("%w: %s is empty: use 1 to %d letters, digits, '-', '_' or '='", ErrInvalidName, kind, maxTokenLen)
	}
	if len(value) > maxTokenLen {
		return fmt.Errorf("%w: %s %q is %d bytes long: use at most %d", ErrInvalidName, kind, clip(value), len(value), maxTokenLen)
	}
	for i := 0; i < len(value); i++ {
		c := value[i]
		if isWordByte(c) || c == '=' {
			continue
		}
		return fmt.Errorf("%w: %s %q has %s at byte %d: use only letters, digits, '-', '_' or '='", ErrInvalidName, kind, clip(value), describeByte(value, i), i)
	}
	return nil
}

// ReplyToken returns the first of ids that is a valid token (ValidateToken),
// or "" when none is. A request refused for its conversation or run id is
// answered on the subject of the next id the sender knows: the event id.
func ReplyToken(ids ...string) string {
	for _, id := range ids {
		if ValidateToken("", id) == nil {
			return id
		}
	}
	return ""
}

func validateStrict(kind, value string, maxLen int) error {
	if value == "" {
		return fmt.Errorf("%w: %s is empty: use 1 to %d letters, digits, '-' or '_'", ErrInvalidName, kind, maxLen)
	}
	if len(value) > maxLen {
		return fmt.Errorf("%w: %s %q is %d bytes long: use at most %d letters, digits, '-' or '_'", ErrInvalidName, kind, clip(value), len(value), maxLen)
	}
	for i := 0; i < len(value); i++ {
		if !isWordByte(value[i]) {
			return fmt.Errorf("%w: %s %q has %s at byte %d: use only letters, digits, '-' or '_'", ErrInvalidName, kind, clip(value), describeByte(value, i), i)
		}
	}
	return nil
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func describeByte(s string, i int) string {
	c := s[i]
	switch {
	case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		return "whitespace"
	case c < 0x20 || c == 0x7f:
		return fmt.Sprintf("control character %#02x", c)
	case c >= utf8.RuneSelf:
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Sprintf("non-ASCII character %q", r)
	default:
		return fmt.Sprintf("%q", rune(c))
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
