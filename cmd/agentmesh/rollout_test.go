package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/schemas"
)

// startPlainServer runs `agentmesh server` as its own process and returns
// its URL.
func startPlainServer(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(agentBinary(t), "server", "--port", "0", "--store", t.TempDir())
	p := proctest.Start(t, cmd, regexp.MustCompile(`listening on (nats://\S+)`))
	p.StopWith(os.Interrupt, 10*time.Second)
	return p.WaitReady(t)[1]
}

// versionResults gathers the results of TextAgent by task id, apart from
// the answers to shadow copies (mesh.result.TextAgent.shadow.<id>).
type versionResults struct {
	mu      sync.Mutex
	results map[string][]schemas.AgentResult
	shadows map[string][]schemas.AgentResult
}

func collectVersionResults(t *testing.T, nc *nats.Conn) *versionResults {
	t.Helper()
	c := &versionResults{results: map[string][]schemas.AgentResult{}, shadows: map[string][]schemas.AgentResult{}}
	sub, err := nc.Subscribe("mesh.result.TextAgent.>", func(m *nats.Msg) {
		ev, err := bus.Decode(m)
		if err != nil {
			return
		}
		var res schemas.AgentResult
		if ev.DataAs(&res) != nil {
			return
		}
		id := ev.Ext(bus.ExtTaskID)
		c.mu.Lock()
		defer c.mu.Unlock()
		if strings.HasPrefix(m.Subject, "mesh.result.TextAgent.shadow.") {
			c.shadows[id] = append(c.shadows[id], res)
		} else {
			c.results[id] = append(c.results[id], res)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return c
}

// await waits until every id has a result (and, with shadows, a shadow
// result too), then returns how many results each version gave for ids,
// failing the test for an id answered more than once.
func (c *versionResults) await(t *testing.T, ids []string, shadows bool) map[string]int {
	t.Helper()
	done := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, id := range ids {
			if len(c.results[id]) == 0 || shadows && len(c.shadows[id]) == 0 {
				return false
			}
		}
		return true
	}
	if !fixture.Within(45*time.Second, done) {
		t.Fatalf("not every one of %d tasks has its result", len(ids))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	by := map[string]int{}
	for _, id := range ids {
		if n := len(c.results[id]); n != 1 {
			t.Errorf("task %s has %d results, want exactly one", id, n)
		}
		by[c.results[id][0].Version]++
	}
	return by
}

func (c *versionResults) shadowVersions(ids []string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	by := map[string]int{}
	for _, id := range ids {
		for _, r := range c.shadows[id] {
			by[r.Version]++
		}
	}
	return by
}

// sendTexts publishes n TextAgent tasks on subject and returns their ids.
func sendTexts(t *testing.T, ctx context.Context, js jetstream.JetStream, subject string, n int) []string {
	t.Helper()
	ids, err := publishTexts(ctx, js, subject, n)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// publishTexts is sendTexts for a goroutine other than the test's.
func publishTexts(ctx context.Context, js jetstream.JetStream, subject string, n int) ([]string, error) {
	ids := make([]string, n)
	for i := range ids {
		ev, err := bus.NewEvent(bus.TypeTaskRequested, "/test", schemas.TaskRequest{
			Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue(fmt.Sprintf("task %d", i), "test")}, Params: map[string]any{"op": "upper"},
		})
		if err != nil {
			return nil, err
		}
		ev.DataContentType = bus.ContentTypeJSON
		msg, err := bus.Encode(subject, ev)
		if err != nil {
			return nil, err
		}
		msg.Header.Set(jetstream.MsgIDHeader, ev.ID)
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			return nil, err
		}
		ids[i] = ev.ID
	}
	return ids, nil
}

// rollout runs `agentmesh rollout ARGS` against url and returns its stdout,
// failing the test unless it exits 0.
func rollout(t *testing.T, url string, args ...string) string {
	t.Helper()
	out, stderr, code := runBinary(t, exec.Command(agentBinary(t), append(append([]string{"rollout"}, args...), "--nats", url)...))
	if code != 0 {
		t.Fatalf("agentmesh rollout %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return out
}

// TestBinaryRolloutByWeight: an `agentmesh server` process, TextAgent at
// versions 1.0.0 and 2.0.0 in processes of their own. At weight 10, 10%
// ± 3% of 1,000 new tasks are answered by 2.0.0; a promote and a roll back
// made while tasks are being sent lose none (each gets exactly one result)
// and then send every new task to 2.0.0, then 1.0.0; a task pinned to a
// version goes to it whatever the rollout; status counts by version.
func TestBinaryRolloutByWeight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	url := startPlainServer(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := bus.Provision(ctx, js, bus.MustNames(""), bus.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	startAgentProc(t, url, "--agent-version", "1.0.0", "--concurrency", "16")
	startAgentProc(t, url, "--agent-version", "2.0.0", "--concurrency", "16")
	c := collectVersionResults(t, nc)

	if out := rollout(t, url, "TextAgent", "--to", "2.0.0", "--weight", "10"); !strings.Contains(out, "applied by 1 server") {
		t.Fatalf("rollout said %q, want it applied by the server", out)
	}
	by := c.await(t, sendTexts(t, ctx, js, "mesh.task.TextAgent", 1000), false)
	t.Logf("at weight 10, 1,000 tasks were answered %v", by)
	if n := by["2.0.0"]; n < 70 || n > 130 || by["1.0.0"]+n != 1000 {
		t.Errorf("at weight 10, 1,000 tasks were answered %v; want 100 ± 30 by 2.0.0, the rest by 1.0.0", by)
	}

	// Promote, then roll back, while tasks are being sent.
	var sent []string
	var sendErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 6 {
			ids, err := publishTexts(ctx, js, "mesh.task.TextAgent", 50)
			if err != nil {
				sendErr = err
				return
			}
			sent = append(sent, ids...)
			time.Sleep(50 * time.Millisecond)
		}
	})
	rollout(t, url, "TextAgent", "--to", "2.0.0", "--promote")
	rollout(t, url, "TextAgent", "--to", "2.0.0", "--weight", "0")
	wg.Wait()
	if sendErr != nil {
		t.Fatal(sendErr)
	}
	c.await(t, sent, false)

	rollout(t, url, "TextAgent", "--to", "2.0.0", "--promote")
	if by := c.await(t, sendTexts(t, ctx, js, "mesh.task.TextAgent", 100), false); by["2.0.0"] != 100 {
		t.Errorf("promoted, 100 tasks were answered %v; want all by 2.0.0", by)
	}
	rollout(t, url, "TextAgent", "--to", "2.0.0", "--weight", "0")
	if by := c.await(t, sendTexts(t, ctx, js, "mesh.task.TextAgent", 100), false); by["1.0.0"] != 100 {
		t.Errorf("rolled back, 100 tasks were answered %v; want all by 1.0.0", by)
	}
	pinned, _ := bus.MustNames("").TaskVersion("TextAgent", "2.0.0")
	if by := c.await(t, sendTexts(t, ctx, js, pinned, 20), false); by["2.0.0"] != 20 {
		t.Errorf("rolled back, 20 tasks pinned to 2.0.0 were answered %v; want all by 2.0.0", by)
	}

	var status struct {
		Rollout  *schemas.Rollout       `json:"rollout"`
		Versions []schemas.VersionStats `json:"versions"`
	}
	if err := json.Unmarshal([]byte(rollout(t, url, "status", "TextAgent", "--json")), &status); err != nil {
		t.Fatal(err)
	}
	if status.Rollout == nil || status.Rollout.From != "1.0.0" || status.Rollout.To != "2.0.0" || status.Rollout.Weight != 0 {
		t.Errorf("status rollout %+v, want from 1.0.0 to 2.0.0 at weight 0", status.Rollout)
	}
	total := 0
	for _, v := range status.Versions {
		total += v.Results
		if v.Version != "1.0.0" && v.Version != "2.0.0" || v.Failures != 0 || v.SuccessRate != 1 {
			t.Errorf("status version %+v, want 1.0.0 or 2.0.0 and no failure", v)
		}
	}
	if want := 1000 + len(sent) + 220; total != want {
		t.Errorf("status counts %d results in all, want %d", total, want)
	}

	// --json, and the removal: new tasks go to mesh.task.TextAgent again.
	var set struct {
		schemas.Rollout
		AppliedBy int `json:"applied_by"`
	}
	if err := json.Unmarshal([]byte(rollout(t, url, "TextAgent", "--weight", "50", "--json")), &set); err != nil || set.Weight != 50 || set.To != "2.0.0" || set.From != "1.0.0" || set.AppliedBy != 1 {
		t.Errorf("rollout --json: %+v, %v; want 50%% from 1.0.0 to 2.0.0, applied by 1", set, err)
	}
	var rm struct {
		Removed   bool `json:"removed"`
		AppliedBy int  `json:"applied_by"`
	}
	if err := json.Unmarshal([]byte(rollout(t, url, "rm", "TextAgent", "--json")), &rm); err != nil || !rm.Removed || rm.AppliedBy != 1 {
		t.Errorf("rollout rm --json: %+v, %v", rm, err)
	}
	if err := json.Unmarshal([]byte(rollout(t, url, "status", "TextAgent", "--json")), &status); err != nil || status.Rollout != nil {
		t.Errorf("status after rm: %+v, %v; want no rollout", status.Rollout, err)
	}
	c.await(t, sendTexts(t, ctx, js, "mesh.task.TextAgent", 50), false)
}

// TestBinaryRolloutShadow: in shadow mode every task is answered once, by
// the version that takes it, to its sender; a copy goes to the new
// version, whose answer is recorded on the shadow subject only.
func TestBinaryRolloutShadow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	url := startPlainServer(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := bus.Provision(ctx, js, bus.MustNames(""), bus.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	startAgentProc(t, url, "--agent-version", "1.0.0")
	startAgentProc(t, url, "--agent-version", "2.0.0")
	c := collectVersionResults(t, nc)
	rollout(t, url, "TextAgent", "--to", "2.0.0", "--weight", "0", "--shadow")
	ids := sendTexts(t, ctx, js, "mesh.task.TextAgent", 50)
	if by := c.await(t, ids, true); by["1.0.0"] != 50 {
		t.Errorf("in shadow mode, 50 tasks were answered %v; want all by 1.0.0", by)
	}
	if by := c.shadowVersions(ids); by["2.0.0"] != 50 || len(by) != 1 {
		t.Errorf("shadow answers %v, want one by 2.0.0 for each of 50 tasks", by)
	}
}

// TestRolloutNotAppliedSaysSo: against a NATS server no agentmesh server
// runs in (so nothing applies rollouts), the rollout command fails and
// says that no server applied it.
func TestRolloutNotAppliedSaysSo(t *testing.T) {
	srv := bustest.Start(t)
	res := srv.Provision(t)
	ctx := context.Background()
	for _, tok := range []string{"1_0_0", "2_0_0"} {
		if _, err := res.Tasks.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable: bus.VersionConsumer("TextAgent", tok), FilterSubject: "mesh.task.TextAgent.v." + tok, AckPolicy: jetstream.AckExplicitPolicy,
		}); err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, code := runBinary(t, exec.Command(agentBinary(t), "rollout", "TextAgent", "--from", "1.0.0", "--to", "2.0.0", "--weight", "10", "--wait", "1s", "--nats", srv.URL()))
	if code != 1 || !strings.Contains(stderr, "no server applied it") {
		t.Errorf("exit %d, stderr %q; want 1 and that no server applied the rollout", code, stderr)
	}
	_, stderr, code = runBinary(t, exec.Command(agentBinary(t), "rollout", "TextAgent", "--to", "2.0_0", "--weight", "10", "--nats", srv.URL()))
	if code != 2 || !strings.Contains(stderr, `"2.0_0"`) {
		t.Errorf("a bad version: exit %d, stderr %q; want 2 and the version named", code, stderr)
	}
}

// TestBinaryRolloutSecure: on a secure mesh, agent credentials issued for
// two versions serve both; a rollout by admin moves a client's new tasks
// (signed for mesh.task.TextAgent) to 2.0.0, whose instance accepts the
// signature; the client may pin a task to 1.0.0; a client may not change
// rollouts.
func TestBinaryRolloutSecure(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	credsDir := t.TempDir()
	url, store := startSecureServer(t, "--creds-dir", credsDir)
	ca, admin := filepath.Join(credsDir, "ca.pem"), filepath.Join(credsDir, "admin.creds")
	agentCreds := issueCreds(t, store, "agent", "TextAgent", "--version", "1.0.0", "--version", "2.0.0")
	for _, v := range []string{"1.0.0", "2.0.0"} {
		p := startAgentProc(t, url, "--creds", agentCreds, "--tls-ca", ca, "--agent-version", v)
		if s := p.Stderr.String(); strings.Contains(s, "no consumer of this version") {
			t.Fatalf("version %s has no consumer: %s", v, s)
		}
	}
	alice := issueCreds(t, store, "client", "alice")
	if out := rollout(t, url, "TextAgent", "--to", "2.0.0", "--promote", "--creds", admin, "--tls-ca", ca); !strings.Contains(out, "applied by 1 server") {
		t.Fatalf("rollout said %q", out)
	}
	task := func(extra ...string) schemas.AgentResult {
		t.Helper()
		args := append([]string{"task", "TextAgent", "--text", "text=hi", "--param", "op=upper", "--json", "--timeout", "20s", "--nats", url, "--creds", alice, "--tls-ca", ca}, extra...)
		out, stderr, code := runBinary(t, exec.Command(agentBinary(t), args...))
		if code != 0 {
			t.Fatalf("agentmesh %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		var res schemas.AgentResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return res
	}
	for range 3 {
		if res := task(); !res.Success || res.Version != "2.0.0" {
			t.Errorf("promoted, alice's task was answered %+v; want a success of 2.0.0", res)
		}
	}
	if res := task("--version", "1.0.0"); !res.Success || res.Version != "1.0.0" {
		t.Errorf("pinned to 1.0.0, alice's task was answered %+v", res)
	}
	// A revision of the account (a revocation) keeps the rollout's mapping:
	// it is in the account's claims.
	issueCreds(t, store, "client", "bob")
	if _, stderr, code := runBinary(t, exec.Command(agentBinary(t), "creds", "revoke", "client-bob", "--store", store, "--nats", url)); code != 0 {
		t.Fatalf("creds revoke client-bob: exit %d: %s", code, stderr)
	}
	for range 3 {
		if res := task(); !res.Success || res.Version != "2.0.0" {
			t.Errorf("promoted, after a revocation, alice's task was answered %+v; want a success of 2.0.0", res)
		}
	}
	_, stderr, code := runBinary(t, exec.Command(agentBinary(t), "rollout", "TextAgent", "--to", "2.0.0", "--weight", "0", "--nats", url, "--creds", alice, "--tls-ca", ca))
	if code == 0 {
		t.Errorf("a client changed a rollout: %s", stderr)
	}

	// Shadow mode on a secure mesh: alice's task is answered by 1.0.0, and
	// 2.0.0 answers its copy (signed by alice for mesh.task.TextAgent),
	// which status counts apart.
	rollout(t, url, "TextAgent", "--to", "2.0.0", "--weight", "0", "--shadow", "--creds", admin, "--tls-ca", ca)
	if res := task(); !res.Success || res.Version != "1.0.0" || res.Shadow {
		t.Errorf("in shadow mode, alice's task was answered %+v; want a success of 1.0.0", res)
	}
	var status struct {
		Versions []schemas.VersionStats `json:"versions"`
	}
	shadowed := func() bool {
		out := rollout(t, url, "status", "TextAgent", "--json", "--creds", admin, "--tls-ca", ca)
		if err := json.Unmarshal([]byte(out), &status); err != nil {
			t.Fatal(err)
		}
		for _, v := range status.Versions {
			if v.Shadow && v.Version == "2.0.0" && v.Results == 1 && v.Failures == 0 {
				return true
			}
		}
		return false
	}
	if !fixture.Within(10*time.Second, shadowed) {
		t.Errorf("status by version %+v; want one successful shadow answer of 2.0.0", status.Versions)
	}
}
