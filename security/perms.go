package security

import (
	"time"

	"github.com/nats-io/jwt/v2"

	"github.com/agentmesh/agentmesh/bus"
)

// The permission table of docs/security.md, one subject a line. A subject
// an identity does not get here it cannot publish or subscribe to: the
// server refuses it with a permissions violation.

// grants collects the subjects of one identity.
type grants struct{ perm jwt.Permissions }

func (g *grants) pub(subjects ...string)     { g.perm.Pub.Allow.Add(subjects...) }
func (g *grants) sub(subjects ...string)     { g.perm.Sub.Allow.Add(subjects...) }
func (g *grants) denyPub(subjects ...string) { g.perm.Pub.Deny.Add(subjects...) }

// replies lets the identity answer requests it received (registry queries,
// NATS micro PING/INFO/STATS, its endpoints) on their reply subjects only.
func (g *grants) replies() {
	g.perm.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
}

// jsAPI is a JetStream API subject: $JS.API.<parts>.
func jsAPI(parts ...string) string {
	s := "$JS.API"
	for _, p := range parts {
		s += "." + p
	}
	return s
}

// readStream lets an identity read stream with consumers of its own (any
// filter) and direct gets; nothing there is another identity's durable.
func (g *grants) readStream(stream string) {
	g.pub(
		jsAPI("CONSUMER.CREATE", stream),
		jsAPI("CONSUMER.CREATE", stream, ">"),
		jsAPI("CONSUMER.INFO", stream, "*"),
		jsAPI("CONSUMER.DELETE", stream, "*"),
		jsAPI("CONSUMER.MSG.NEXT", stream, "*"),
		jsAPI("DIRECT.GET", stream),
		jsAPI("DIRECT.GET", stream, ">"),
		jsAPI("STREAM.MSG.GET", stream),
	)
}

// Permissions returns the permissions of id on a mesh under names. Admin
// gets none, which a NATS user JWT reads as everything.
func Permissions(id bus.Identity, n bus.Names) jwt.Permissions {
	g := &grants{}
	if id.Role == bus.RoleAdmin {
		return g.perm
	}
	// Everyone: its own inbox, stream metadata (to bind to the mesh),
	// flow-control replies of its consumers.
	g.sub(id.InboxPrefix() + ".>")
	g.pub(jsAPI("INFO"), jsAPI("STREAM.INFO.*"), "$JS.FC.>")
	filesGrants(g, id, n)
	switch id.Role {
	case bus.RoleAgent:
		agentGrants(g, id.Name, n)
		versionGrants(g, id.Name, id.VersionList(), n)
	case bus.RoleClient:
		clientGrants(g, id.Name, n)
	case bus.RoleOrchestrator:
		orchestratorGrants(g, n)
	}
	return g.perm
}

// filesGrants: a client reads, writes and deletes its own files bucket
// (bus.Names.ClientFilesStore) and no other; agents and the orchestrator
// the shared bucket, and every client's through the object store's own
// subjects only ($O.<bucket>.>), since a permission cannot name a prefix
// of a bucket: a last-message get and a consumer filtered on a $O subject
// of any stream, which only object stores hold.
func filesGrants(g *grants, id bus.Identity, n bus.Names) {
	bucket := func(b string) {
		s := "OBJ_" + b
		g.pub("$O."+b+".>", jsAPI("STREAM.PURGE", s), jsAPI("CONSUMER.DURABLE.CREATE", s, "*"))
		g.readStream(s)
	}
	if id.Role == bus.RoleClient {
		bucket(n.ClientFilesStore(id.Name))
		return
	}
	bucket(n.FilesStore())
	g.pub("$O.*.>", jsAPI("DIRECT.GET", "*", "$O", ">"), jsAPI("CONSUMER.CREATE", "*", "*", "$O", ">"))
	if id.Role == bus.RoleAgent {
		// The object store deletes the consumer it read a file with; its
		// name is random, but the permission cannot name the stream, so
		// the durables whose names are known are kept out of it (and the
		// orchestrator's, denyOrchestratorDurables).
		g.pub(jsAPI("CONSUMER.DELETE", "*", "*"))
		g.denyPub(jsAPI("CONSUMER.DELETE", n.TasksStream(), "*"), jsAPI("CONSUMER.DELETE", n.SchedulesStream(), "*"))
	}
}

// agentGrants: agent a takes its own tasks, answers under its own result
// subjects, announces and keeps registry keys under its own name.
func agentGrants(g *grants, a string, n bus.Names) {
	task, _ := n.Task(a)
	announce, _ := n.Announce(a)
	depart, _ := n.Depart(a)
	control, _ := n.Control(a)
	dead, _ := n.Dead(a)
	refused, _ := n.DeadRefused(a)
	tasks := n.TasksStream()
	// Its durable consumer, named after it and filtered on its subject:
	// the subject form carries the filter, so no other filter passes.
	g.pub(jsAPI("CONSUMER.CREATE", tasks, a, task))
	g.pub(jsAPI("CONSUMER.INFO", tasks, a))
	g.pub(jsAPI("CONSUMER.MSG.NEXT", tasks, a))
	g.pub("$JS.ACK." + tasks + "." + a + ".>")
	g.pub(n.AgentResults(a))                                 // results of its tasks, nowhere else
	g.pub(n.Events("*", "task"), n.Events("*", "task")+".*") // progress of its tasks, unowned or a client's (bus.ExtOwner)
	g.pub(n.Deltas("*"), n.Deltas("*")+".*")                 // the text its model writes (agents.ReportText), likewise
	g.pub(announce, depart, dead, refused)                   // the registry events, dead letters and refusals of its name
	g.pub(n.KVPut(n.AgentsBucket(), a+".>"))                 // its registry keys, <agent>.<instance>
	g.sub(n.RegistryQuery(), control)                        // registry queries, cancellations
	g.sub("$SRV.>")                                          // NATS micro discovery (PING, INFO, STATS)
	g.sub(n.Prefix()+".call."+a, n.Prefix()+".call."+a+".>") // its NATS micro endpoint
	g.replies()
	// Agent-to-agent calls (ExecutionContext.Call): send a task to any
	// agent, read the results of its own calls only, and the registry to
	// find an agent by what it offers.
	g.pub(n.Prefix() + ".task.*")
	// or pinned to one version of it (docs/protocol.md, "Versions and rollouts")
	g.pub(n.Prefix() + ".task.*.v.*")
	results := n.ResultsStream()
	g.pub(jsAPI("CONSUMER.CREATE", results, "*", n.CallResults(a)))
	g.pub(jsAPI("CONSUMER.INFO", results, "*"), jsAPI("CONSUMER.DELETE", results, "*"), jsAPI("CONSUMER.MSG.NEXT", results, "*"))
	g.sub(n.CallResults(a))
	g.readStream("KV_" + n.AgentsBucket())
	llmGrants(g, n)
	// The step journal (docs/durability.md): record its tasks' steps (a
	// create) and read them back by key (a direct get), nothing more: an
	// agent's permissions travel in its JWT, whose size is bounded.
	g.pub(n.KVPut(n.StepsBucket(), ">"), jsAPI("DIRECT.GET", "KV_"+n.StepsBucket(), ">"))
	g.denyOrchestratorDurables(n)
}

// versionGrants: agent a also takes the tasks of each of its versions
// from that version's own consumer, named and filtered as the runtime
// makes it (docs/protocol.md, "Versions and rollouts"). A consumer name is
// one subject token, which no wildcard matches in part: each version is
// granted by name when the credentials are issued.
func versionGrants(g *grants, a string, versions []string, n bus.Names) {
	tasks := n.TasksStream()
	for _, v := range versions {
		subj, err := n.TaskVersion(a, v)
		if err != nil {
			continue // Identity.Validate refused it before
		}
		tok, _ := bus.VersionToken(v)
		c := bus.VersionConsumer(a, tok)
		g.pub(jsAPI("CONSUMER.CREATE", tasks, c, subj), jsAPI("CONSUMER.INFO", tasks, c), jsAPI("CONSUMER.MSG.NEXT", tasks, c))
		g.pub("$JS.ACK." + tasks + "." + c + ".>")
	}
}

// llmGrants: the agent's model calls keep the mesh's budgets and rate
// limits (docs/llm.md): it reads any key of the LLM bucket (the declared
// limits, the ledger) and writes the ledgers of tasks, pipeline waves and
// chat turns (which its tasks' budget_key name) and the rate limits'
// slots, not the declared limits nor a client's budget.
// Five subjects scoped to the bucket, whatever keys it holds.
func llmGrants(g *grants, n bus.Names) {
	b := n.LLMBucket()
	g.pub(jsAPI("DIRECT.GET", "KV_"+b, ">"))
	g.pub(n.KVPut(b, llmTaskBudgets+".>"), n.KVPut(b, llmWaveBudgets+".>"), n.KVPut(b, llmTurnBudgets+".>"), n.KVPut(b, llmRateLimits+".>"))
}

// The prefixes of the LLM bucket's keys an agent writes (llm/budget.go,
// llm/ratelimit.go).
const (
	llmTaskBudgets = "budget.task"
	llmWaveBudgets = "budget.run"  // schemas.RunBudgetKeyPrefix: a pipeline wave's, which its steps share
	llmTurnBudgets = "budget.turn" // schemas.TurnBudgetKeyPrefix: a chat turn's, which its tool calls share
	llmRateLimits  = "rate"
)

// denyOrchestratorDurables: the orchestrator's durables are never a
// client's or an agent's to pull from.
func (g *grants) denyOrchestratorDurables(n bus.Names) {
	for _, s := range []string{n.ResultsStream(), n.RequestsStream()} {
		g.denyPub(jsAPI("CONSUMER.*", s, "orchestrator"), jsAPI("CONSUMER.*", s, "orchestrator", ">"), jsAPI("CONSUMER.MSG.NEXT", s, "orchestrator"))
	}
}

// clientGrants: client c submits requests and direct calls, reads the
// registry, and the events, deltas and results of what it owns: its runs,
// conversations and direct calls.
func clientGrants(g *grants, c string, n bus.Names) {
	// Requests on its own subjects only: the subject tells the
	// orchestrator who sent a request, and so who owns the run or
	// conversation it starts.
	own := n.ForClient(c)
	g.pub(own.ChatRequest(), own.PipelineSubmit())
	g.pub(own.PipelineResolve())  // answers to approval and input steps
	g.pub(n.Prefix() + ".task.*") // direct calls; agents answer only on their result subjects
	// a direct call pinned to a version (docs/protocol.md, "Versions and rollouts")
	g.pub(n.Prefix() + ".task.*.v.*")
	g.pub(n.RegistryQuery())
	g.pub(n.Prefix()+".call.*", n.Prefix()+".call.*.>") // agents' NATS micro endpoints
	g.pub("$SRV.>")                                     // NATS micro discovery
	results := n.ResultsStream()
	g.pub(jsAPI("CONSUMER.CREATE", results, "*", n.ClientResults(c)))
	g.pub(jsAPI("CONSUMER.INFO", results, "*"), jsAPI("CONSUMER.DELETE", results, "*"), jsAPI("CONSUMER.MSG.NEXT", results, "*"))
	g.sub(n.ClientResults(c))
	// Events: on core NATS and through consumers of the events stream
	// filtered on its own events (mesh.events.*.*.<c>) only. The filter is
	// in the API subject, so no other filter passes (mesh.events.>,
	// mesh.events.<id>.> are other subjects), and no filterless create,
	// durable or direct get is granted; the consumers' names are the
	// server's secret between it and their maker.
	events := n.EventsStream()
	g.pub(jsAPI("CONSUMER.CREATE", events, "*", own.AllEvents()))
	g.pub(jsAPI("CONSUMER.INFO", events, "*"), jsAPI("CONSUMER.DELETE", events, "*"), jsAPI("CONSUMER.MSG.NEXT", events, "*"))
	g.sub(own.AllEvents())
	g.sub(own.AllDeltas()) // the chat model's text as it is written (core NATS)
	g.readStream("KV_" + n.AgentsBucket())
	// The refusals of tasks no result subject can answer (an unsigned
	// task, one with no usable id), and nothing else of the dead letters:
	// consumers filtered on them, no direct gets.
	dead := n.DeadStream()
	g.pub(jsAPI("CONSUMER.CREATE", dead, "*", n.DeadRefusedAll()))
	g.pub(jsAPI("CONSUMER.INFO", dead, "*"), jsAPI("CONSUMER.DELETE", dead, "*"), jsAPI("CONSUMER.MSG.NEXT", dead, "*"))
	g.sub(n.DeadRefusedAll())
	g.denyOrchestratorDurables(n)
}

// orchestratorGrants: the orchestrator reads every request and result,
// sends every task, writes conversation and run state and events; it
// cannot change the streams themselves (admin's job).
func orchestratorGrants(g *grants, n bus.Names) {
	g.pub(n.Prefix()+".>", "$JS.ACK.>")
	g.sub(n.Prefix() + ".>")
	g.pub(n.KVPut(n.ConversationsBucket(), ">"), n.KVPut(n.RunsBucket(), ">"), n.KVPut(n.LLMBucket(), ">"))
	g.pub(n.KVPut(n.MemoryBucket(), ">")) // the facts the chat loop remembers, under each client's identity
	g.pub(jsAPI(">"))
	g.denyPub(jsAPI("STREAM.CREATE.>"), jsAPI("STREAM.UPDATE.>"), jsAPI("STREAM.DELETE.>"))
}
