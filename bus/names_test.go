package bus_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

func TestNewNamesPrefix(t *testing.T) {
	tests := []struct {
		prefix  string
		want    string
		wantErr bool
	}{
		{"", "mesh", false},
		{"mesh", "mesh", false},
		{"team-a_1", "team-a_1", false},
		{"a.b", "", true},
		{"a*", "", true},
		{">", "", true},
		{"with space", "", true},
		{strings.Repeat("x", 33), "", true},
	}
	for _, tt := range tests {
		n, err := bus.NewNames(tt.prefix)
		if tt.wantErr {
			if !errors.Is(err, bus.ErrInvalidName) {
				t.Errorf("NewNames(%q) error = %v, want ErrInvalidName", tt.prefix, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("NewNames(%q): %v", tt.prefix, err)
			continue
		}
		if n.Prefix() != tt.want {
			t.Errorf("NewNames(%q).Prefix() = %q, want %q", tt.prefix, n.Prefix(), tt.want)
		}
	}
}

func TestNamesSubjects(t *testing.T) {
	n := bus.MustNames("")
	must := func(s string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct{ got, want string }{
		{must(n.Task("search")), "mesh.task.search"},
		{n.Tasks(), "mesh.task.>"},
		{n.Result("search", "t1"), "mesh.result.search.t1"},
		{n.AgentResults("search"), "mesh.result.search.>"},
		{n.Results(), "mesh.result.>"},
		{n.Deltas("c1"), "mesh.delta.c1"},
		{n.AllDeltas(), "mesh.delta.>"},
		{n.ClientResult("search", "alice", "t1"), "mesh.result.search.client.alice.t1"},
		{n.ClientResults("alice"), "mesh.result.*.client.alice.>"},
		{n.OrchestratorResult("search", "o1"), "mesh.result.search.orchestrator.o1"},
		{n.OrchestratorResults(), "mesh.result.*.orchestrator.>"},
		{n.ResultAgent("mesh.result.search.orchestrator.o1"), "search"},
		{n.ResultAgent("mesh.result.search.t1"), "search"},
		{n.ResultAgent("mesh.result.t1"), ""},
		{n.ResultAgent("other.result.search.t1"), ""},
		{n.Events("c1", "chat"), "mesh.events.c1.chat"},
		{n.EventsOf("c1"), "mesh.events.c1.>"},
		{n.AllEvents(), "mesh.events.>"},
		{must(n.Announce("search")), "mesh.registry.announce.search"},
		{n.Announcements(), "mesh.registry.announce.>"},
		{must(n.Depart("search")), "mesh.registry.depart.search"},
		{n.Departures(), "mesh.registry.depart.>"},
		{n.RegistryQuery(), "mesh.registry.query"},
		{n.ChatRequest(), "mesh.chat.request"},
		{n.PipelineSubmit(), "mesh.pipeline.submit"},
		{must(n.Control("search")), "mesh.control.search"},
		{must(n.Call("search")), "mesh.call.search"},
		{must(n.Dead("search")), "mesh.dead.search"},
		{n.DeadAll(), "mesh.dead.>"},
		{must(n.DeadRefused("search")), "mesh.dead.search.refused"},
		{n.DeadRefusedAll(), "mesh.dead.*.refused"},
		{n.RequestsStream(), "MESH_REQUESTS"},
		{n.TasksStream(), "MESH_TASKS"},
		{n.ResultsStream(), "MESH_RESULTS"},
		{n.EventsStream(), "MESH_EVENTS"},
		{n.DeadStream(), "MESH_DEAD"},
		{n.AgentsBucket(), "mesh_agents"},
		{n.ConversationsBucket(), "mesh_conversations"},
		{n.RunsBucket(), "mesh_runs"},
		{n.FilesStore(), "mesh_files"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	other := bus.MustNames("lab")
	if got := other.TasksStream(); got != "LAB_TASKS" {
		t.Errorf("TasksStream with prefix lab = %q", got)
	}
	if got := other.Tasks(); got != "lab.task.>" {
		t.Errorf("Tasks with prefix lab = %q", got)
	}
}

func TestValidateAgentName(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string // substring of the error; "" means valid
	}{
		{"search", ""},
		{"Image-Analyzer_2", ""},
		{strings.Repeat("a", 64), ""},
		{"", "empty"},
		{strings.Repeat("a", 65), "65 bytes"},
		{"a b", "whitespace"},
		{"a\tb", "whitespace"},
		{"a.b", `'.'`},
		{"a*", `'*'`},
		{"a>", `'>'`},
		{"a/b", `'/'`},
		{`a\b`, `'\\'`},
		{"a\x01b", "control character"},
		{"a\x7fb", "control character"},
		{"é", "non-ASCII"},
	}
	for _, tt := range tests {
		err := bus.ValidateAgentName(tt.name)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("ValidateAgentName(%q) = %v, want nil", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, bus.ErrInvalidName) {
			t.Errorf("ValidateAgentName(%q) = %v, want ErrInvalidName", tt.name, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.wantErr) || !strings.Contains(msg, "use") {
			t.Errorf("ValidateAgentName(%q) = %q, want it to mention %q and what to use", tt.name, msg, tt.wantErr)
		}
	}
	n := bus.MustNames("")
	if _, err := n.Task("a.b"); !errors.Is(err, bus.ErrInvalidName) {
		t.Errorf("Task(a.b) error = %v", err)
	}
}

func TestValidateToken(t *testing.T) {
	tests := []struct {
		value string
		ok    bool
	}{
		{"0b8f9a3e-4c1d-4f5e-9a2b-1c3d5e7f9a0b", true},
		{"run_1=x", true},
		{"", false},
		{"a.b", false},
		{"a b", false},
		{"*", false},
		{">", false},
		{strings.Repeat("x", 129), false},
	}
	for _, tt := range tests {
		err := bus.ValidateToken("task id", tt.value)
		if tt.ok != (err == nil) {
			t.Errorf("ValidateToken(%q) = %v, want ok=%v", tt.value, err, tt.ok)
		}
		if err != nil && (!errors.Is(err, bus.ErrInvalidName) || !strings.Contains(err.Error(), "task id")) {
			t.Errorf("ValidateToken(%q) = %v, want ErrInvalidName naming the kind", tt.value, err)
		}
	}
}

func TestIdentityUsers(t *testing.T) {
	for _, tt := range []struct {
		user string
		ok   bool
	}{{"agent-TextAgent", true}, {"client-alice", true}, {"orchestrator", true}, {"admin", true},
		{"agent", false}, {"admin-x", false}, {"client-a.b", false}, {"root", false}, {"agent-", false}} {
		id, err := bus.ParseUser(tt.user)
		if (err == nil) != tt.ok {
			t.Errorf("ParseUser(%q) = %+v, %v", tt.user, id, err)
			continue
		}
		if tt.ok && (id.User() != tt.user || id.InboxPrefix() != "_INBOX."+tt.user) {
			t.Errorf("%q round trips to %q, inbox %q", tt.user, id.User(), id.InboxPrefix())
		}
	}
}

// A client's request subjects carry its name; the orchestrator reads the
// plain subject and the client back from them, and nothing else names one.
func TestNamesForClientRequests(t *testing.T) {
	n := bus.MustNames("")
	alice := n.ForClient("alice")
	if alice.Client() != "alice" || n.Client() != "" || alice.ForClient("").Client() != "" {
		t.Fatalf("clients %q %q", alice.Client(), n.Client())
	}
	for _, tt := range []struct{ own, plain string }{
		{alice.ChatRequest(), n.ChatRequest()},
		{alice.PipelineSubmit(), n.PipelineSubmit()},
		{alice.PipelineResolve(), n.PipelineResolve()},
	} {
		if tt.own != tt.plain+".client.alice" {
			t.Errorf("alice's subject %q, want %s.client.alice", tt.own, tt.plain)
		}
		if p, c := n.SplitRequest(tt.own); p != tt.plain || c != "alice" {
			t.Errorf("SplitRequest(%q) = %q, %q", tt.own, p, c)
		}
		if p, c := n.SplitRequest(tt.plain); p != tt.plain || c != "" {
			t.Errorf("SplitRequest(%q) = %q, %q", tt.plain, p, c)
		}
	}
	for _, s := range []string{"mesh.chat.request.client.", "mesh.chat.request.client.a.b", "mesh.task.x.client.alice", "other.chat.request.client.alice"} {
		if _, c := n.SplitRequest(s); c != "" {
			t.Errorf("SplitRequest(%q) names client %q, want none", s, c)
		}
	}
	want := []string{"mesh.chat.request", "mesh.chat.request.client.*", "mesh.pipeline.submit", "mesh.pipeline.submit.client.*", "mesh.pipeline.resolve", "mesh.pipeline.resolve.client.*"}
	if got := alice.Requests(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Requests() = %v, want %v", got, want)
	}
}

func TestNamesVersions(t *testing.T) {
	n := bus.MustNames("")
	got, err := n.TaskVersion("Echo", "1.2.0")
	if err != nil || got != "mesh.task.Echo.v.1_2_0" {
		t.Errorf("TaskVersion(Echo, 1.2.0) = %q, %v", got, err)
	}
	if _, err := n.TaskVersion("Echo", "1.2+x"); !errors.Is(err, bus.ErrInvalidName) || !strings.Contains(err.Error(), `"1.2+x"`) {
		t.Errorf("TaskVersion(Echo, 1.2+x) error %v; want ErrInvalidName naming the version", err)
	}
	if got := bus.VersionConsumer("Echo", "1_2_0"); got != "Echo__v_1_2_0" {
		t.Errorf("VersionConsumer = %q", got)
	}
	if got := n.ShadowResult("Echo", "t1"); got != "mesh.result.Echo.shadow.t1" || n.ResultAgent(got) != "Echo" {
		t.Errorf("ShadowResult = %q (agent %q)", got, n.ResultAgent(got))
	}
	src, to, err := n.RolloutMapping(schemas.Rollout{Agent: "Echo", From: "1.0.0", To: "2.0.0", Weight: 10})
	if err != nil || src != "mesh.task.Echo" || len(to) != 2 || to[0] != (bus.RolloutTarget{Subject: "mesh.task.Echo.v.2_0_0", Percent: 10}) || to[1] != (bus.RolloutTarget{Subject: "mesh.task.Echo.v.1_0_0", Percent: 90}) {
		t.Errorf("RolloutMapping at 10 = %s %v, %v", src, to, err)
	}
}

// The events and deltas of what a client owns end in its name, a token of
// their own that permissions can match; the plain names still catch them.
func TestNamesForClientEvents(t *testing.T) {
	n := bus.MustNames("")
	alice := n.ForClient("alice")
	for _, tt := range []struct{ got, want string }{
		{alice.Events("c1", "chat"), "mesh.events.c1.chat.alice"},
		{alice.EventsOf("c1"), "mesh.events.c1.*.alice"},
		{alice.AllEvents(), "mesh.events.*.*.alice"},
		{alice.Deltas("c1"), "mesh.delta.c1.alice"},
		{alice.AllDeltas(), "mesh.delta.*.alice"},
		{n.ForClient("").Events("c1", "chat"), "mesh.events.c1.chat"},
		{n.ForClient("").Deltas("c1"), "mesh.delta.c1"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	// What the orchestrator and admin follow (EventsOf, AllEvents of the
	// plain names) matches an owned event and an unowned one.
	for _, s := range []string{alice.Events("c1", "chat"), n.Events("c1", "chat")} {
		if !subjectMatches(n.EventsOf("c1"), s) || !subjectMatches(n.AllEvents(), s) {
			t.Errorf("%s is not caught by %s and %s", s, n.EventsOf("c1"), n.AllEvents())
		}
	}
	if subjectMatches(alice.AllEvents(), n.ForClient("bob").Events("c1", "chat")) || subjectMatches(alice.AllDeltas(), n.ForClient("bob").Deltas("c1")) {
		t.Error("alice's filters catch bob's events or deltas")
	}
}

// subjectMatches reports whether filter (with * and >) matches subject.
func subjectMatches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		if tok == ">" {
			return len(s) > i
		}
		if i >= len(s) || (tok != "*" && tok != s[i]) {
			return false
		}
	}
	return len(f) == len(s)
}

// What a reader of one kind, or of the text, of an id follows: owned or
// not with the plain names, its own with a client's.
func TestNamesEventsKindAndDeltasOf(t *testing.T) {
	n := bus.MustNames("")
	alice := n.ForClient("alice")
	for _, tt := range []struct{ got, want []string }{
		{n.EventsKind("r1", "pipeline"), []string{"mesh.events.r1.pipeline", "mesh.events.r1.pipeline.*"}},
		{alice.EventsKind("*", "chat"), []string{"mesh.events.*.chat.alice"}},
		{n.DeltasOf("c1"), []string{"mesh.delta.c1", "mesh.delta.c1.*"}},
		{alice.DeltasOf("c1"), []string{"mesh.delta.c1.alice"}},
	} {
		if strings.Join(tt.got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("got %v, want %v", tt.got, tt.want)
		}
	}
}
