package typescript_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/internal/nodetest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// exampleAgent is the name of the TypeScript example agent
// (examples/wordlength.ts).
const exampleAgent = "TsWordLength"

// TestTypeScriptSDK builds the SDK with tsc, checks its generated types
// against schemas/json, runs its own tests (node --test) against a live
// embedded mesh, runs the TypeScript example agent as a process that takes
// a step between two Go agents in a pipeline and answers `agentmesh task
// --direct`, and installs the packed tarball into a fresh folder used from
// plain JavaScript.
func TestTypeScriptSDK(t *testing.T) {
	node, npm, err := nodetest.Tools()
	if err != nil {
		t.Skipf("skipping the TypeScript SDK: %v", err)
	}
	nodetest.Install(t, npm, ".")
	npmRun(t, npm, "run", "check-types")
	nodetest.Build(t, npm, ".")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m := meshtest.New(t)
	srv, res, nc := m.Srv, m.Res, m.NC
	o := m.Orchestrator(t, nil, orchestrator.WithSweepInterval(200*time.Millisecond), orchestrator.WithChat(chat.WithLogger(slog.New(slog.DiscardHandler))))
	m.Run(t, text.New())

	t.Run("node --test", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, node, "--test", "--test-concurrency=1", "dist/test/")
		cmd.Env = append(os.Environ(), "NATS_URL="+srv.URL(), "AGENTMESH_TEST_ORCHESTRATOR=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the SDK's tests failed: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "# fail 0") || !strings.Contains(string(out), "# skipped 0\n") {
			t.Fatalf("the SDK's tests failed or skipped some:\n%s", out)
		}
		t.Logf("%s", lastLines(string(out), 8))
	})

	agent := startNode(t, node, srv.URL(), "dist/examples/wordlength.js")
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	err = o.Registry().Wait(wctx, exampleAgent, 1)
	wcancel()
	if err != nil {
		t.Fatalf("the TypeScript agent never appeared in the registry: %v\n%s", err, agent.Out.String())
	}

	t.Run("registry", func(t *testing.T) {
		info, ok := o.Registry().Lookup(exampleAgent)
		if !ok || len(info.Instances) != 1 || info.Instances[0].PID != agent.Cmd.Process.Pid {
			t.Fatalf("Lookup(%s) = %+v, %v; want one instance, the node process %d", exampleAgent, info, ok, agent.Cmd.Process.Pid)
		}
		if err := info.Contract.Validate(); err != nil {
			t.Errorf("the announced contract fails Validate: %v", err)
		}
		if len(info.Contract.DataTypes) != 1 || info.Contract.DataTypes[0].Name != "WORD_LENGTHS" {
			t.Errorf("declared data types %+v, want WORD_LENGTHS", info.Contract.DataTypes)
		}
		e, err := res.Agents.Get(ctx, exampleAgent+"."+info.Instances[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas.ValidateJSON(schemas.SchemaAnnouncement, e.Value()); err != nil {
			t.Errorf("registry value fails announcement.schema.json: %v", err)
		}
		// micro discovery sees the instance and its call endpoint.
		reply, err := nc.Request("$SRV.INFO."+exampleAgent, nil, 5*time.Second)
		if err != nil {
			t.Fatalf("micro INFO: %v", err)
		}
		var mi micro.Info
		if err := json.Unmarshal(reply.Data, &mi); err != nil {
			t.Fatal(err)
		}
		if mi.Name != exampleAgent || mi.Metadata["instance"] != info.Instances[0].ID || len(mi.Endpoints) != 1 ||
			mi.Endpoints[0].Subject != "mesh.call."+exampleAgent || mi.Endpoints[0].QueueGroup != "q" {
			t.Errorf("micro INFO = %+v", mi)
		}
	})

	t.Run("pipeline of Go and TypeScript agents", func(t *testing.T) {
		spec := client.NewPipeline("go-ts-go").
			Step("shout", text.Name).Param("op", "upper").Input("text", "text:the mesh speaks typescript").
			Then("measure", exampleAgent).Input("text", "shout.text").
			Then("echo", text.Name).Param("op", "reverse").Input("text", "measure.report").
			MustBuild()
		runID, err := client.SubmitPipeline(ctx, srv.JetStream(t), srv.Names(), spec, "", "sdk/typescript test")
		if err != nil {
			t.Fatal(err)
		}
		var r *state.RunState
		if !fixture.Within(45*time.Second, func() bool {
			r, err = o.Store().Run(ctx, runID)
			return err == nil && r.Done()
		}) {
			t.Fatalf("run %s not done after 45s (%v)\nagent output:\n%s", runID, err, agent.Out.String())
		}
		if r.Status != schemas.RunCompleted {
			t.Fatalf("run %s ended %s: %s\nsteps %+v\nagent output:\n%s", runID, r.Status, r.Error, r.Steps, agent.Out.String())
		}
		measure := r.Steps["measure"]
		var lengths map[string]int
		if err := json.Unmarshal(measure.Outputs["lengths"].Value, &lengths); err != nil {
			t.Fatalf("measure's lengths %s: %v", measure.Outputs["lengths"].Value, err)
		}
		// "THE MESH SPEAKS TYPESCRIPT": words of 3, 4, 6 and 10 letters.
		if want := map[string]int{"3": 1, "4": 1, "6": 1, "10": 1}; !equalMaps(lengths, want) {
			t.Errorf("measure's lengths %v, want %v", lengths, want)
		}
		echo, _ := r.Steps["echo"].Outputs["text"].Text()
		if want := reverse("4 words, 5.8 letters on average"); echo != want {
			t.Errorf("the Go step after the TypeScript one said %q, want %q", echo, want)
		}
	})

	bin := buildAgentmesh(t)
	t.Run("agentmesh task --direct", func(t *testing.T) {
		out, err := exec.CommandContext(ctx, bin, "--nats", srv.URL(), "task", exampleAgent, "--text", "text=hello mesh", "--direct").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "measured 2 words") {
			t.Fatalf("agentmesh task --direct: %v\n%s\nagent output:\n%s", err, out, agent.Out.String())
		}
		out, err = exec.CommandContext(ctx, bin, "--nats", srv.URL(), "task", exampleAgent, "--text", "text=hello mesh again").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "measured 3 words") {
			t.Fatalf("agentmesh task (durable): %v\n%s", err, out)
		}
		// A direct call that fails is counted as an error by micro.
		out, err = exec.CommandContext(ctx, bin, "--nats", srv.URL(), "task", exampleAgent, "--text", "nope=x", "--direct").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "invalid_input") {
			t.Fatalf("agentmesh task --direct with an undeclared input: %v\n%s", err, out)
		}
		reply, err := nc.Request("$SRV.STATS."+exampleAgent, nil, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var stats micro.Stats
		if err := json.Unmarshal(reply.Data, &stats); err != nil || len(stats.Endpoints) != 1 {
			t.Fatalf("micro STATS %s: %v", reply.Data, err)
		}
		if e := stats.Endpoints[0]; e.NumRequests != 2 || e.NumErrors != 1 {
			t.Errorf("micro stats of %s: %d requests, %d errors; want the 2 direct calls, 1 failed", exampleAgent, e.NumRequests, e.NumErrors)
		}
		out, err = exec.CommandContext(ctx, bin, "--nats", srv.URL(), "--json", "agents").Output()
		if err != nil {
			t.Fatalf("agentmesh agents: %v", err)
		}
		var list []client.AgentInfo
		if err := json.Unmarshal(out, &list); err != nil {
			t.Fatalf("agentmesh agents --json printed %q: %v", out, err)
		}
		listed := false
		for _, a := range list {
			listed = listed || (a.Contract.Name == exampleAgent && len(a.Instances) == 1 && len(a.Contract.DataTypes) == 1)
		}
		if !listed {
			t.Errorf("agentmesh agents does not list %s with its instance and data type: %s", exampleAgent, out)
		}
	})

	t.Run("packed tarball used from plain JavaScript", func(t *testing.T) {
		packDir := t.TempDir()
		out, err := exec.CommandContext(ctx, npm, "pack", "--pack-destination", packDir).CombinedOutput()
		if err != nil {
			t.Fatalf("npm pack: %v\n%s", err, out)
		}
		tgz, _ := filepath.Glob(filepath.Join(packDir, "*.tgz"))
		if len(tgz) != 1 {
			t.Fatalf("npm pack made %v", tgz)
		}
		app := t.TempDir()
		write(t, filepath.Join(app, "package.json"), `{"name": "plain-js-app", "version": "1.0.0", "type": "module", "private": true}`)
		install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", tgz[0], "@nats-io/transport-node@3.4.0")
		install.Dir = app
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("npm install of the tarball: %v\n%s", err, out)
		}
		write(t, filepath.Join(app, "use.js"), plainJS)
		cmd := exec.CommandContext(ctx, node, "use.js")
		cmd.Dir = app
		cmd.Env = append(os.Environ(), "NATS_URL="+srv.URL())
		out, err = cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "result: true HELLO FROM JAVASCRIPT") || !strings.Contains(string(out), "direct: true hello") {
			t.Fatalf("plain JavaScript with the packed SDK: %v\n%s", err, out)
		}
	})

	t.Run("SIGTERM drains and departs", func(t *testing.T) {
		sub, err := nc.SubscribeSync("mesh.registry.depart." + exampleAgent)
		if err != nil {
			t.Fatal(err)
		}
		if err := agent.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-agent.Exited:
			if agent.Err != nil {
				t.Fatalf("agent exited with %v after SIGTERM\n%s", agent.Err, agent.Out.String())
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("agent still running 20s after SIGTERM\n%s", agent.Out.String())
		}
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("no departure: %v", err)
		}
		ev, err := bus.Decode(msg)
		if err != nil || ev.Type != bus.TypeAgentDeparted {
			t.Fatalf("departure: type %q, %v", ev.Type, err)
		}
		keys, err := res.Agents.Keys(ctx)
		if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
			t.Fatal(err)
		}
		for _, k := range keys {
			if strings.HasPrefix(k, exampleAgent+".") {
				t.Errorf("registry key %s left after the departure", k)
			}
		}
	})
}

// TestTypeScriptTypesCheck: the drift check of the generated types fails
// when a schema changes and src/types.gen.ts does not.
func TestTypeScriptTypesCheck(t *testing.T) {
	node, _, err := nodetest.Tools()
	if err != nil {
		t.Skipf("skipping the TypeScript SDK: %v", err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "schemas", "json"))); err != nil {
		t.Fatal(err)
	}
	check := func() ([]byte, error) {
		return exec.Command(node, "scripts/gen-types.mjs", "--check", "--schemas", dir).CombinedOutput()
	}
	if out, err := check(); err != nil {
		t.Fatalf("the checked-in types do not match schemas/json: %v\n%s", err, out)
	}
	task := filepath.Join(dir, "task.schema.json")
	b, err := os.ReadFile(task)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), `"instruction": {"type": "string"}`, `"instruction": {"type": "string"}, "priority": {"type": "integer"}`, 1)
	if changed == string(b) {
		t.Fatal("task.schema.json no longer has the instruction property this test edits")
	}
	write(t, task, changed)
	out, err := check()
	if err == nil || !strings.Contains(string(out), "npm run gen") {
		t.Fatalf("a changed schema passed the check: %v\n%s", err, out)
	}
}

// plainJS is a program that uses the installed package from JavaScript:
// an agent of its own and a client that calls it on both paths.
const plainJS = `import { connect } from "@nats-io/transport-node";
import { defineAgent, run, MeshClient } from "@agentmesh/sdk";

const nc = await connect({ servers: process.env.NATS_URL });
const agent = defineAgent({
  name: "PlainJsUpper", capability: "TRANSFORMATION", description: "upper-cases a text (plain JavaScript)",
  inputs: [{ name: "text", data_type: "TEXT", required: true }],
  outputs: [{ name: "text", data_type: "TEXT" }],
}, (task) => ({ summary: "upper", outputs: { text: task.value("text").toUpperCase() } }));
const running = await run(nc, agent, { handleSignals: false });
const mc = new MeshClient(nc);
const { result } = await mc.task("PlainJsUpper", { inputs: { text: { data_type: "TEXT", value: "hello from javascript" } } });
console.log("result:", result.success, result.outputs.text.value);
const direct = await mc.call("PlainJsUpper", { inputs: { text: { data_type: "TEXT", value: "x" } } });
console.log("direct:", direct.result.success, "hello");
await running.stop();
await nc.drain();
`

// startNode runs a node script of the SDK (see nodetest.Start).
func startNode(t *testing.T, node, natsURL, script string, env ...string) *nodetest.Process {
	return nodetest.Start(t, node, script, natsURL, env...)
}

func npmRun(t *testing.T, npm string, args ...string) {
	t.Helper()
	cmd := exec.Command(npm, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func buildAgentmesh(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agentmesh")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/agentmesh")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/agentmesh: %v\n%s", err, out)
	}
	return bin
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func equalMaps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
