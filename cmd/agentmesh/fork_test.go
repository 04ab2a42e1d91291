package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/schemas"
)

// TestRunFromForksAtAStep: run --from RUN --at STEP runs STEP again with
// the changed param and keeps the step before it (no task), says so, and
// runs lists the fork with its origin; a fork asked wrongly is a usage
// error, and one the orchestrator refuses exits 1 with its reason.
func TestRunFromForksAtAStep(t *testing.T) {
	url := pipelineMesh(t)
	var out, errOut bytes.Buffer
	if code := run([]string{"--nats", url, "run", pipelineFile(t, "shout.yaml", shoutPipeline), "--run-id", "first"}, &out, &errOut); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, &out, &errOut)
	}
	out.Reset()
	if code := run([]string{"--nats", url, "run", "--from", "first", "--at", "count", "--param", "count.op=reverse", "--run-id", "again"}, &out, &errOut); code != 0 {
		t.Fatalf("run --from: exit %d\n%s%s", code, &out, &errOut)
	}
	for _, want := range []string{
		"run again: forked from run first at step count",
		"wave 1  upper        TextAgent            completed (kept from run first, no task)",
		"wave 2  count        TextAgent            completed",
		`"ILC EHT MORF OLLEH"`,
		"run again completed: 2 completed, 0 failed, 0 skipped",
		"forked from run first at step count",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("run --from output misses %q:\n%s", want, &out)
		}
	}
	out.Reset()
	if code := run([]string{"--nats", url, "state", "show", "again"}, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "forked from run first at step count") || !strings.Contains(out.String(), "kept from run first (no task)") {
		t.Errorf("state show of the fork: exit %d\n%s%s", code, &out, &errOut)
	}
	out.Reset()
	if code := run([]string{"--nats", url, "runs"}, &out, &errOut); code != 0 {
		t.Fatalf("runs: exit %d: %s", code, &errOut)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasSuffix(strings.TrimSpace(lines[0]), "FROM") || !strings.HasPrefix(lines[1], "again") || !strings.HasSuffix(strings.TrimSpace(lines[1]), "first@count") {
		t.Errorf("runs does not show the fork's origin:\n%s", &out)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--from", "first"}, exitUsage, "give --at STEP"},
		{[]string{"run", "--at", "count", pipelineFile(t, "shout.yaml", shoutPipeline)}, exitUsage, "give --from RUN too"},
		{[]string{"run", "--from", "first", "--at", "count", "x.yaml"}, exitUsage, "takes no FILE"},
		{[]string{"run", "--from", "first", "--at", "count", "--param", "op=reverse"}, exitUsage, `param "op": write <step>.<param>`},
		{[]string{"run", "--from", "first", "--at", "count", "--param", "upper.op=lower"}, exitFailure, `step "upper" does not depend on "count"`},
		{[]string{"run", "--from", "nope", "--at", "count"}, exitFailure, `no run "nope"`},
	} {
		out.Reset()
		errOut.Reset()
		code := run(append([]string{"--nats", url}, c.args...), &out, &errOut)
		if code != c.code || !strings.Contains(out.String()+errOut.String(), c.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s%s", c.args, code, c.code, c.want, &out, &errOut)
		}
	}
}

// TestChatRewind: chat --conversation C --rewind N continues C from
// before its turn N in a new conversation, which records its origin; the
// flag used wrongly is a usage error.
func TestChatRewind(t *testing.T) {
	mesh := meshtest.New(t)
	textMesh{
		agentOpts: []agents.Option{agents.WithHeartbeat(time.Second)},
		orchOpts:  []orchestrator.Option{orchestrator.WithChat()},
	}.start(t, mesh)
	url := mesh.Srv.URL()
	var out, errOut bytes.Buffer
	for _, msg := range []string{"count the words in hello world", "count the words in a b c"} {
		args := []string{"--nats", url, "chat", "--conversation", "talk", msg}
		if msg == "count the words in hello world" {
			args = []string{"--nats", url, "chat", "--conversation", "talk", "--new", msg}
		}
		if code := run(args, &out, &errOut); code != 0 {
			t.Fatalf("chat %q: exit %d\n%s%s", msg, code, &out, &errOut)
		}
	}
	out.Reset()
	errOut.Reset()
	if code := run([]string{"--nats", url, "chat", "--conversation", "talk", "--rewind", "2", "count the words in x y z w"}, &out, &errOut); code != 0 {
		t.Fatalf("chat --rewind: exit %d\n%s%s", code, &out, &errOut)
	}
	m := regexp.MustCompile(`(?m)^conversation (\S+)$`).FindStringSubmatch(errOut.String())
	if !strings.Contains(errOut.String(), "rewinding conversation talk to before its turn 2") || m == nil || m[1] == "talk" {
		t.Fatalf("chat --rewind does not name the new conversation:\n%s", &errOut)
	}
	out.Reset()
	if code := run([]string{"--nats", url, "state", "show", m[1]}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "rewound from conversation talk before its turn 2") {
		t.Errorf("state show of the rewound conversation: exit %d\n%s%s", code, &out, &errOut)
	}
	out.Reset()
	if code := run([]string{"--nats", url, "--json", "state", "show", m[1]}, &out, &errOut); code != 0 {
		t.Fatalf("state show: exit %d\n%s", code, &errOut)
	}
	var st schemas.ConversationState
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || st.Turns != 2 || st.Origin == nil || *st.Origin != (schemas.ChatRewind{ConversationID: "talk", Turn: 2}) {
		t.Errorf("the rewound conversation: %v %+v", err, st)
	}
	var users []string
	for _, h := range st.History {
		if h.Kind == "user" {
			users = append(users, h.Text)
		}
	}
	if got := strings.Join(users, "|"); got != "count the words in hello world|count the words in x y z w" {
		t.Errorf("the rewound conversation's user messages: %s", got)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"chat", "--rewind", "1", "hi"}, "give --conversation ID"},
		{[]string{"chat", "--conversation", "talk", "--rewind", "0", "hi"}, "turns count from 1"},
		{[]string{"chat", "--conversation", "talk", "--new", "--rewind", "1", "hi"}, "drop --new"},
	} {
		out.Reset()
		errOut.Reset()
		if code := run(append([]string{"--nats", url}, c.args...), &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s%s", c.args, code, exitUsage, c.want, &out, &errOut)
		}
	}
}
