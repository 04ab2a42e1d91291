package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/bus/bustest"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/internal/nodetest"
	"github.com/agentmesh/agentmesh/internal/proctest"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// mcpExample installs the npm packages of examples/mcp (the TypeScript SDK
// and the MCP inspector CLI) and returns its directory; the test skips when
// node is missing.
func mcpExample(t *testing.T) (node, dir string) {
	t.Helper()
	node, npm, err := nodetest.Tools()
	if err != nil {
		t.Skip(err)
	}
	dir, err = filepath.Abs("../../examples/mcp")
	if err != nil {
		t.Fatal(err)
	}
	nodetest.Install(t, npm, dir)
	return node, dir
}

// inspect runs the MCP inspector CLI against `agentmesh mcp` (the built
// binary, on stdio) with args (--method ...) and decodes its JSON output.
func inspect(t *testing.T, node, dir, natsURL string, args ...string) map[string]any {
	t.Helper()
	build := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector-cli", "build")
	full := append([]string{filepath.Join(build, "cli.js"), "--cli", "-e", "NATS_URL=" + natsURL, agentBinary(t), "mcp"}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, full...)
	// inspector-cli 1.0.3 reads its own package.json as "../package.json"
	// from the working directory: run it from its build directory.
	cmd.Dir = build
	out, errOut, code := runBinary(t, cmd)
	if code != 0 {
		t.Fatalf("inspector %v: exit %d\n%s\n%s", args, code, out, errOut)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("inspector %v: output is not JSON (%v):\n%s\n%s", args, err, out, errOut)
	}
	return v
}

func inspectedTools(v map[string]any) []string {
	var names []string
	tools, _ := v["tools"].([]any)
	for _, tl := range tools {
		if m, ok := tl.(map[string]any); ok {
			names = append(names, m["name"].(string))
		}
	}
	slices.Sort(names)
	return names
}

// TestMCPServerWithInspectorCLI lists and calls the tools of `agentmesh
// mcp` with the MCP inspector CLI, before and after an agent starts.
func TestMCPServerWithInspectorCLI(t *testing.T) {
	node, dir := mcpExample(t)
	srv := bustest.Start(t)
	srv.Provision(t)

	if got := inspectedTools(inspect(t, node, dir, srv.URL(), "--method", "tools/list")); !slices.Equal(got, []string{"chat", "run_pipeline"}) {
		t.Fatalf("tools with no agent = %v", got)
	}
	startAgentProc(t, srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waitTextAgents(t, ctx, srv.Provision(t), 1)

	listed := inspect(t, node, dir, srv.URL(), "--method", "tools/list")
	if got := inspectedTools(listed); !slices.Equal(got, []string{"TextAgent", "chat", "run_pipeline"}) {
		t.Fatalf("tools with TextAgent running = %v", got)
	}
	called := inspect(t, node, dir, srv.URL(), "--method", "tools/call", "--tool-name", "TextAgent",
		"--tool-arg", "text=hello mesh", "--tool-arg", "op=upper")
	content, _ := called["content"].([]any)
	var texts []string
	for _, c := range content {
		texts = append(texts, c.(map[string]any)["text"].(string))
	}
	if called["isError"] == true || !slices.Contains(texts, "HELLO MESH") {
		t.Fatalf("tools/call TextAgent = %v", called)
	}
	failed := inspect(t, node, dir, srv.URL(), "--method", "tools/call", "--tool-name", "TextAgent",
		"--tool-arg", "text=hello", "--tool-arg", "op=shout")
	if failed["isError"] != true || !strings.Contains(failed["content"].([]any)[0].(map[string]any)["text"].(string), "invalid_params: ") {
		t.Fatalf("a bad op: %v, want a tool error with invalid_params", failed)
	}
}

// TestMCPAgentProcessInPipeline runs `agentmesh agent --mcp 'node
// examples/mcp/server.mjs'` as its own process and uses two of the
// TypeScript server's tools in a pipeline.
func TestMCPAgentProcessInPipeline(t *testing.T) {
	node, dir := mcpExample(t)
	mt := meshtest.New(t)
	srv, res := mt.Srv, mt.Res
	agentsReady := startMCPAgentProc(t, node, dir, srv.URL(), 4)
	slices.Sort(agentsReady)
	if !slices.Equal(agentsReady, []string{"ts_fail", "ts_reverse", "ts_toggle_echo", "ts_word_count"}) {
		t.Fatalf("agents = %v", agentsReady)
	}
	mt.Orchestrator(t, agentsReady)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := client.NewPipeline("words").
		SeedValue("note", schemas.TypeText, "", "red sky at night").
		Step("count", "ts_word_count").Param("top", 1).Input("text", "seed.note").
		Then("rev", "ts_reverse").
		MustBuild()
	id, err := client.SubmitPipeline(ctx, srv.JetStream(t), srv.Names(), spec, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	store := state.New(res.Conversations, res.Runs)
	run := meshtest.WaitRun(t, store, id, 30*time.Second)
	got, _ := run.Steps["rev"].Outputs["text"].Text()
	if run.Status != schemas.RunCompleted || got != "at frequent: most words; 4" {
		t.Fatalf("run %s, rev output %q", run.Status, got)
	}
}

// TestMCPServerOverHTTP starts `agentmesh mcp --http` as a process and
// lists its tools with the MCP Go SDK client over streamable HTTP.
func TestMCPServerOverHTTP(t *testing.T) {
	srv := bustest.Start(t)
	srv.Provision(t)
	startAgentProc(t, srv.URL())
	cmd := exec.Command(agentBinary(t), "mcp", "--http", "127.0.0.1:0", "--nats", srv.URL())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, u, ok := strings.Cut(sc.Text(), "streamable HTTP on "); ok {
				url <- u
			}
		}
	}()
	var endpoint string
	select {
	case endpoint = <-url:
	case <-exited:
		t.Fatal("agentmesh mcp --http exited")
	case <-time.After(30 * time.Second):
		t.Fatal("agentmesh mcp --http did not say where it listens")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var names []string
	listed := fixture.Within(10*time.Second, func() bool {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		return slices.Contains(names, "TextAgent")
	})
	if !listed {
		t.Fatalf("tools = %v, want TextAgent among them", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "TextAgent", Arguments: map[string]any{"text": "over http", "op": "title"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if got := res.Content[len(res.Content)-1].(*mcp.TextContent).Text; got != "Over Http" {
		t.Fatalf("output %q", got)
	}
	// What a page of another site could make a browser send is refused.
	wantBrowserRefusals(t, endpoint, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
}

// startMCPAgentProc runs `agentmesh agent --mcp` on examples/mcp's server
// (prefix ts_) as its own process until the test ends and returns the
// names of the first n agents it says are ready.
func startMCPAgentProc(t *testing.T, node, dir, url string, n int) []string {
	t.Helper()
	cmd := exec.Command(agentBinary(t), "agent", "--mcp", node+" '"+filepath.Join(dir, "server.mjs")+"'",
		"--mcp-prefix", "ts_", "--nats", url, "--heartbeat", agentTestHeartbeat.String())
	p := proctest.Start(t, cmd, regexp.MustCompile(`^agent (\S+) .*ready$`))
	var agentsReady []string
	for len(agentsReady) < n {
		agentsReady = append(agentsReady, p.WaitReady(t)[1])
	}
	return agentsReady
}
