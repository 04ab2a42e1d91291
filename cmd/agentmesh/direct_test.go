package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/agentmesh/agentmesh/bus/bustest"
)

// `agentmesh task --direct` calls an agent running as its own process on
// its micro endpoint, and `nats micro stats TextAgent` (the $SRV.STATS
// request, decoded with nats.go's micro types) counts the calls.
func TestTaskDirect(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	bin := agentBinary(t)
	run := func(args ...string) (string, string, int) {
		return runBinary(t, exec.Command(bin, append(args, "--nats", srv.URL())...))
	}
	_, errOut, code := run("task", "TextAgent", "--direct", "--text", "text=x", "--timeout", "2s")
	if code != 1 || !strings.Contains(errOut, "no instance of TextAgent answers mesh.call.TextAgent") {
		t.Errorf("direct call with no instance: exit %d, stderr %q", code, errOut)
	}

	startAgentProc(t, srv.URL(), "--instance", "direct1")
	out, errOut, code := run("task", "TextAgent", "--direct", "--text", "text=hello direct path", "--param", "op=title")
	if code != 0 || !strings.Contains(out, `"Hello Direct Path"`) || !strings.Contains(out, "TextAgent completed") {
		t.Errorf("task --direct: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = run("task", "TextAgent", "--direct", "--text", "text=x", "--param", "op=shout")
	if code != 1 || !strings.Contains(errOut, "invalid_params") || !strings.Contains(errOut, "shout") {
		t.Errorf("failing direct task: exit %d, stderr %q; want 1 with the error", code, errOut)
	}

	subj, err := micro.ControlSubject(micro.StatsVerb, "TextAgent", "")
	if err != nil {
		t.Fatal(err)
	}
	reply, err := srv.Conn(t).Request(subj, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var st micro.Stats
	if err := json.Unmarshal(reply.Data, &st); err != nil || len(st.Endpoints) != 1 {
		t.Fatalf("stats %s (%v)", reply.Data, err)
	}
	if e := st.Endpoints[0]; e.Name != "call" || e.NumRequests != 2 || e.NumErrors != 1 || e.ProcessingTime <= 0 || st.Metadata["instance"] != "direct1" {
		t.Errorf("stats of TextAgent: %s", reply.Data)
	}
}
