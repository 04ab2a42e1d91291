package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/agents"
	meshmcp "github.com/agentmesh/agentmesh/bridge/mcp"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/internal/nodetest"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// exampleServer is the TypeScript SDK server of examples/mcp, its npm
// packages installed; the test skips when node is missing.
func exampleServer(t testing.TB) string {
	t.Helper()
	_, npm, err := nodetest.Tools()
	if err != nil {
		t.Skip(err)
	}
	dir, err := filepath.Abs("../../examples/mcp")
	if err != nil {
		t.Fatal(err)
	}
	nodetest.Install(t, npm, dir)
	return filepath.Join(dir, "server.mjs")
}

// dialExample starts the example server over stdio.
func dialExample(t testing.TB, opts ...meshmcp.RemoteOption) *meshmcp.Remote {
	t.Helper()
	tr, err := meshmcp.CommandTransport("node '" + exampleServer(t) + "'")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := meshmcp.Dial(ctx, tr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestRemoteToolsBecomeContracts(t *testing.T) {
	r := dialExample(t, meshmcp.WithPrefix("ts_"))
	ags, err := r.Agents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]schemas.AgentContract{}
	for _, a := range ags {
		byName[a.Contract().Name] = a.Contract()
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range byName {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, []string{"ts_fail", "ts_reverse", "ts_toggle_echo", "ts_word_count"}) {
		t.Fatalf("agents = %v", got)
	}
	wc := byName["ts_word_count"]
	if len(wc.Inputs) != 1 || wc.Inputs[0].Name != "text" || wc.Inputs[0].DataType != schemas.TypeText || wc.Inputs[0].Required {
		t.Errorf("inputs = %+v, want one optional TEXT input text", wc.Inputs)
	}
	if len(wc.Outputs) != 2 || wc.Outputs[0].DataType != schemas.TypeText || wc.Outputs[1].DataType != meshmcp.TypeJSON {
		t.Errorf("outputs = %+v, want text (TEXT) and json (JSON)", wc.Outputs)
	}
	var params map[string]any
	if err := json.Unmarshal(wc.Params, &params); err != nil {
		t.Fatal(err)
	}
	if _, req := params["required"]; req || params["properties"].(map[string]any)["top"] == nil {
		t.Errorf("params = %s: want the tool's schema with text no longer required", wc.Params)
	}
	if rv := byName["ts_reverse"]; len(rv.Outputs) != 1 || len(rv.DataTypes) != 0 {
		t.Errorf("reverse declares no output schema, yet outputs %+v", rv.Outputs)
	}
	if !strings.Contains(wc.Description, "Counts the words") || wc.Capability != meshmcp.Capability {
		t.Errorf("description %q capability %q", wc.Description, wc.Capability)
	}
}

// TestRemoteAgentsThroughTheMesh runs the TypeScript server's tools as mesh
// agents and calls them with the MCP Go SDK client through the mesh's own
// MCP server: MCP -> mesh -> MCP, with progress relayed both ways.
func TestRemoteAgentsThroughTheMesh(t *testing.T) {
	m := startMesh(t)
	r := dialExample(t)
	m.runRemote(t, r)
	m.mcp.Sync()
	var notes progressNotes
	cs := connect(t, m.mcp, notes.options())
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "word_count", Arguments: map[string]any{"text": "the sea, the sky and the sun", "top": 1}}
	params.SetProgressToken("wc")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("word_count failed: %s", res.Content[0].(*mcp.TextContent).Text)
	}
	sc := res.StructuredContent.(map[string]any)["outputs"].(map[string]any)
	js, _ := json.Marshal(sc["json"])
	if !strings.Contains(string(js), `"value":{"top":["the"],"words":7}`) {
		t.Errorf("json output = %s", js)
	}
	// The server sends every notification before the result; the client
	// may hand one to its handler after CallTool returned.
	if got := notes.waitFor("word_count: counting (50%)", 5*time.Second); !slices.Contains(got, "word_count: counting (50%)") {
		t.Errorf("progress = %q: want the TypeScript server's progress, relayed", got)
	}

	cases := []struct {
		tool string
		args map[string]any
		code string
		text string
	}{
		{"word_count", map[string]any{"text": "x", "top": 50}, schemas.CodeInvalidParams, "maximum"},
		{"fail", map[string]any{"reason": "testing"}, schemas.CodeAgentError, "failed on purpose: testing"},
		{"reverse", map[string]any{}, schemas.CodeInvalidInput, `give the TEXT input "text" or the param "text"`},
	}
	for _, tc := range cases {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatal(err)
		}
		txt := res.Content[0].(*mcp.TextContent).Text
		if !res.IsError || !strings.HasPrefix(txt, tc.code+": ") || !strings.Contains(txt, tc.text) {
			t.Errorf("%s %v: isError %v, %q; want %s mentioning %q", tc.tool, tc.args, res.IsError, txt, tc.code, tc.text)
		}
	}
}

// TestRemoteAgentsInAPipeline chains two tools of the TypeScript server in
// a pipeline: the TEXT output of one fills the TEXT input of the next.
func TestRemoteAgentsInAPipeline(t *testing.T) {
	m := startMesh(t)
	r := dialExample(t)
	m.runRemote(t, r)
	m.orchestrate(t)
	spec, err := client.NewPipeline("words").
		SeedValue("note", schemas.TypeText, "", "red sky at night").
		Step("count", "word_count").Param("top", 2).Input("text", "seed.note").
		Then("rev", "reverse").
		Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := client.SubmitPipeline(ctx, m.Srv.JetStream(t), m.Srv.Names(), spec, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	run := waitRun(t, m, id)
	if run.Status != schemas.RunCompleted {
		t.Fatalf("run %s: %+v", run.Status, run.Steps)
	}
	got, _ := run.Steps["rev"].Outputs["text"].Text()
	if got != "night at, frequent: most words; 4" {
		t.Fatalf("rev output = %q (count said %q)", got, mustText(run.Steps["count"].Outputs["text"]))
	}
}

func mustText(v schemas.TypedValue) string { s, _ := v.Text(); return s }

// waitRun waits until the run ends.
func waitRun(t *testing.T, m *testMesh, id string) *state.RunState {
	t.Helper()
	return meshtest.WaitRun(t, state.New(m.res.Conversations, m.res.Runs), id, 30*time.Second)
}

// TestRemoteOverStreamableHTTP uses the mesh's own MCP server, served as
// streamable HTTP, as the remote: its ShoutAgent tool becomes the agent
// via_ShoutAgent, whose TEXT input fills the tool's text argument.
func TestRemoteOverStreamableHTTP(t *testing.T) {
	m := startMesh(t)
	m.runAgent(t, shout("ShoutAgent"))
	m.mcp.Sync()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.mcp.MCP() }, nil))
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := meshmcp.Dial(ctx, meshmcp.HTTPTransport(hs.URL), meshmcp.WithPrefix("via_"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	ags, err := r.Agents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var via agents.Agent
	for _, a := range ags {
		if a.Contract().Name == "via_ShoutAgent" {
			via = a
		}
	}
	if via == nil || len(ags) != 3 {
		t.Fatalf("agents %d, via_ShoutAgent %v", len(ags), via)
	}
	if in := via.Contract().Inputs; len(in) != 1 || in[0].Name != "text" {
		t.Fatalf("inputs %+v", in)
	}
	ec := schemas.ContextFromTask(schemas.DefaultRegistry(), schemas.TaskRequest{
		Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("over http", "test")},
		Params: map[string]any{"suffix": "!"},
	})
	res, err := via.Execute(ctx, ec)
	if err != nil || !res.Success {
		t.Fatalf("execute: %v %+v", err, res.Error)
	}
	if got, _ := res.Outputs["text"].Text(); got != "shouted\nOVER HTTP!" {
		t.Fatalf("text output %q", got)
	}
	res, err = via.Execute(ctx, schemas.ContextFromTask(schemas.DefaultRegistry(), schemas.TaskRequest{
		Inputs: map[string]schemas.TypedValue{"text": schemas.TextValue("x", "test")},
		Params: map[string]any{"suffix": "toolong"},
	}))
	if err != nil || res.Success || res.Error.Code != schemas.CodeAgentError || !strings.Contains(res.Error.Message, "invalid_params: ") {
		t.Fatalf("a tool error across two bridges: %v %+v", err, res.Error)
	}
}

// TestRemoteFollowsToolListChanges follows the TypeScript server's tools:
// its toggle_echo tool adds and removes a tool, and the agent echo starts
// and stops with it.
func TestRemoteFollowsToolListChanges(t *testing.T) {
	m := startMesh(t)
	r := dialExample(t)
	ctx, cancel := context.WithCancel(context.Background())
	followed := make(chan error, 1)
	go func() {
		followed <- r.Follow(ctx, func(_ context.Context, a agents.Agent) (func(), error) { return m.runAgent(t, a), nil })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-followed; err != nil {
			t.Errorf("Follow: %v", err)
		}
	})
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	if err := m.reg.Wait(wctx, "toggle_echo", 1); err != nil {
		t.Fatal(err)
	}
	m.mcp.Sync()
	cs := connect(t, m.mcp, nil)
	call := func(tool string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(wctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
		return res.Content[len(res.Content)-1].(*mcp.TextContent).Text
	}
	if got := call("toggle_echo", nil); got != "echo added" {
		t.Fatalf("toggle_echo: %q", got)
	}
	if err := m.reg.Wait(wctx, "echo", 1); err != nil {
		t.Fatalf("the agent of the added tool did not start: %v", err)
	}
	m.mcp.Sync()
	if got := call("echo", map[string]any{"text": "hi"}); got != "echo: hi" {
		t.Fatalf("echo: %q", got)
	}
	if got := call("toggle_echo", nil); got != "echo removed" {
		t.Fatalf("toggle_echo: %q", got)
	}
	fixture.Eventually(t, "the agent of the removed tool out of the registry", func() bool {
		_, live := m.reg.Lookup("echo")
		return !live
	})
}
