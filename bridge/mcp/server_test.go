package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/agents"
	meshmcp "github.com/agentmesh/agentmesh/bridge/mcp"
	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/resolvers"
	"github.com/agentmesh/agentmesh/schemas"
)

// testMesh is a provisioned embedded server with a registry and the MCP
// server of the mesh following it.
type testMesh struct {
	*meshtest.Mesh
	res *bus.Resources
	reg *client.Registry
	mcp *meshmcp.Server
}

func startMesh(t testing.TB) *testMesh {
	t.Helper()
	m := meshtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg, err := client.NewRegistry(ctx, m.Res.Agents)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	s, err := meshmcp.NewServer(m.Srv.Conn(t), m.Res, reg, meshmcp.WithTaskTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	fctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Follow(fctx) }()
	t.Cleanup(func() { stop(); <-done })
	return &testMesh{Mesh: m, res: m.Res, reg: reg, mcp: s}
}

// runAgent runs a on the runtime until the returned stop is called (or the
// test ends) and waits until the registry sees it.
func (m *testMesh) runAgent(t testing.TB, a agents.Agent) (stop func()) {
	t.Helper()
	stop = m.Run(t, a)
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := m.reg.Wait(wctx, a.Contract().Name, 1); err != nil {
		t.Fatal(err)
	}
	return stop
}

// runRemote runs the agents of r's tools on the mesh until the test ends.
func (m *testMesh) runRemote(t testing.TB, r *meshmcp.Remote) {
	t.Helper()
	ags, err := r.Agents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ags {
		m.runAgent(t, a)
	}
}

// progressNotes keeps the messages of the progress notifications an MCP
// client receives.
type progressNotes struct {
	mu  sync.Mutex
	got []string
}

// options are client options that keep the client's notifications in p.
func (p *progressNotes) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.got = append(p.got, r.Params.Message)
	}}
}

// waitFor returns the messages once one is want, or when d has passed.
func (p *progressNotes) waitFor(want string, d time.Duration) []string {
	fixture.Within(d, func() bool { return slices.Contains(p.list(), want) })
	return p.list()
}

// list is a copy of the messages so far.
func (p *progressNotes) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

// shout upper-cases its text input, reporting progress on the way.
func shout(name string) agents.Agent {
	return agents.Func(schemas.AgentContract{
		Name: name, Version: "1.0.0", Capability: schemas.CapTransformation,
		Description: "Upper-cases a text.",
		Inputs:      []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true, Description: "the text"}},
		Outputs:     []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}},
		Params:      json.RawMessage(`{"type":"object","properties":{"suffix":{"type":"string","maxLength":3}},"additionalProperties":false}`),
	}, func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
		in, err := ec.Text("text")
		if err != nil {
			return schemas.AgentResult{}, err
		}
		agents.ReportProgress(ctx, "shouting", 50)
		return schemas.AgentResult{Success: true, Summary: "shouted", Outputs: map[string]schemas.TypedValue{
			"text": schemas.TextValue(strings.ToUpper(in)+ec.Param("suffix"), name),
		}}, nil
	})
}

// connect is an MCP Go SDK client session on the server, over in-memory
// transports; changed receives a value at each tools/list_changed.
func connect(t testing.TB, s *meshmcp.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := s.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func TestServerListsAndCallsAgentTools(t *testing.T) {
	m := startMesh(t)
	m.runAgent(t, shout("ShoutAgent"))
	m.mcp.Sync()

	var notes progressNotes
	cs := connect(t, m.mcp, notes.options())
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var shoutTool *mcp.Tool
	for _, tl := range tools.Tools {
		if tl.Name == "ShoutAgent" {
			shoutTool = tl
		}
	}
	if got := toolNames(t, cs); !slices.Equal(got, []string{"ShoutAgent", "chat", "run_pipeline"}) {
		t.Fatalf("tools = %v, want ShoutAgent, chat, run_pipeline", got)
	}
	schema, _ := json.Marshal(shoutTool.InputSchema)
	for _, want := range []string{`"text":{"description":"the text. TEXT input.","type":"string"}`, `"suffix":{`, `"required":["text"]`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("input schema %s lacks %s", schema, want)
		}
	}

	params := &mcp.CallToolParams{Name: "ShoutAgent", Arguments: map[string]any{"text": "hello mesh", "suffix": "!"}}
	params.SetProgressToken("p-1")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("tool error: %v", res.Content[0].(*mcp.TextContent).Text)
	}
	if got := res.Content[1].(*mcp.TextContent).Text; got != "HELLO MESH!" {
		t.Fatalf("output = %q, want HELLO MESH!", got)
	}
	var got []string
	if !fixture.Within(fixture.WaitTimeout, func() bool {
		got = notes.list()
		return slices.Contains(got, "ShoutAgent: shouting (50%)")
	}) {
		t.Fatalf("progress notifications %q lack the agent's progress", got)
	}
	if got[0] != "sent to ShoutAgent" {
		t.Errorf("first progress = %q, want the dispatch", got[0])
	}
}

func TestServerToolErrorsCarryTheMeshCode(t *testing.T) {
	m := startMesh(t)
	m.runAgent(t, shout("ShoutAgent"))
	m.mcp.Sync()
	cs := connect(t, m.mcp, nil)
	cases := []struct {
		name string
		args any
		code string
	}{
		{"params fail the contract", map[string]any{"text": "x", "suffix": "too long"}, schemas.CodeInvalidParams},
		{"undeclared param", map[string]any{"text": "x", "loud": true}, schemas.CodeInvalidParams},
		{"required input missing", map[string]any{}, schemas.CodeInvalidInput},
		{"input of the wrong shape", map[string]any{"text": 5}, schemas.CodeInvalidInput},
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "NoSuchAgent"}); err == nil {
		t.Error("calling an unknown tool is not a protocol error")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ShoutAgent", Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError {
				t.Fatalf("want a tool error, got %+v", res.Content)
			}
			sc, _ := res.StructuredContent.(map[string]any)
			if sc["code"] != tc.code {
				t.Fatalf("code = %v, want %s (%s)", sc["code"], tc.code, res.Content[0].(*mcp.TextContent).Text)
			}
			if txt := res.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(txt, tc.code+": ") {
				t.Fatalf("text %q does not start with the code", txt)
			}
		})
	}
}

func TestServerToolListFollowsTheRegistry(t *testing.T) {
	m := startMesh(t)
	changed := make(chan struct{}, 16)
	cs := connect(t, m.mcp, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if got := toolNames(t, cs); !slices.Equal(got, []string{"chat", "run_pipeline"}) {
		t.Fatalf("tools = %v before any agent", got)
	}
	caps := cs.InitializeResult().Capabilities
	if caps.Tools == nil || !caps.Tools.ListChanged || caps.Resources == nil || caps.Resources.ListChanged {
		t.Fatalf("capabilities tools %+v resources %+v: want tools.listChanged only", caps.Tools, caps.Resources)
	}
	waitTools := func(want []string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case <-changed:
				if got := toolNames(t, cs); slices.Equal(got, want) {
					return
				}
			case <-deadline:
				t.Fatalf("no tools/list_changed leading to %v; tools are %v", want, toolNames(t, cs))
			}
		}
	}
	stop := m.runAgent(t, shout("LateAgent"))
	waitTools([]string{"LateAgent", "chat", "run_pipeline"})
	stop()
	waitTools([]string{"chat", "run_pipeline"})
}

func TestServerFilesAreResources(t *testing.T) {
	m := startMesh(t)
	store := resolvers.NewObjectStore(m.res.Files)
	ctx := context.Background()
	ref, err := store.Store(ctx, strings.NewReader("sunset over the sea"), "text/plain", map[string]string{resolvers.MetaFilename: "note.txt"})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, m.mcp, nil)
	list, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Resources) != 1 || list.Resources[0].URI != meshmcp.FileURIPrefix+ref.ID || list.Resources[0].Name != "note.txt" {
		t.Fatalf("resources = %+v, want the one stored file", list.Resources)
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: meshmcp.FileURIPrefix + ref.ID})
	if err != nil {
		t.Fatal(err)
	}
	if read.Contents[0].Text != "sunset over the sea" || read.Contents[0].MIMEType != "text/plain" {
		t.Fatalf("read = %+v", read.Contents[0])
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: meshmcp.FileURIPrefix + "f-nosuchfile0000000000"}); err == nil {
		t.Fatal("reading a missing file succeeded")
	}
}

// orchestrate runs an orchestrator replica with a chat loop (opts) until
// the test ends.
func (m *testMesh) orchestrate(t testing.TB, opts ...chat.Option) {
	t.Helper()
	m.Orchestrator(t, nil, orchestrator.WithChat(opts...))
}

func TestServerRunsPipelinesAndChats(t *testing.T) {
	m := startMesh(t)
	m.runAgent(t, shout("ShoutAgent"))
	model := llmtest.New(t,
		llmtest.Calls(llmtest.Call("ShoutAgent", map[string]any{"text": "hi there"})),
		llmtest.Answer("ShoutAgent says HI THERE."),
	)
	llmc, err := llm.New(model.Config())
	if err != nil {
		t.Fatal(err)
	}
	m.orchestrate(t, chat.WithLLM(llmc))
	var notes progressNotes
	cs := connect(t, m.mcp, notes.options())
	ctx := context.Background()

	spec := `
name: shout
seed:
  values:
    note: {data_type: TEXT, value: "sunsets over the sea"}
steps:
  - {id: loud, agent: ShoutAgent, params: {suffix: "${vars.end}"}, inputs: {text: seed.note}}
vars: {end: "?"}
`
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_pipeline", Arguments: map[string]any{"pipeline": spec, "vars": map[string]any{"end": "!"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("run_pipeline failed: %s", res.Content[0].(*mcp.TextContent).Text)
	}
	if got := res.Content[len(res.Content)-1].(*mcp.TextContent).Text; got != "loud.text: SUNSETS OVER THE SEA!" {
		t.Fatalf("last content = %q, want the step's TEXT output", got)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_pipeline", Arguments: map[string]any{"pipeline": map[string]any{
		"name": "bad", "steps": []any{map[string]any{"id": "x", "agent": "NoSuchAgent"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := res.StructuredContent.(map[string]any); !res.IsError || sc["code"] != schemas.CodeInvalidPipeline {
		t.Fatalf("a pipeline naming an unknown agent: isError %v, structured %v; want invalid_pipeline", res.IsError, res.StructuredContent)
	}

	params := &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"message": "shout hi there"}}
	params.SetProgressToken(7)
	res, err = cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if res.IsError || sc["conversation_id"] == "" || sc["state"] != schemas.ChatCompleted || res.Content[0].(*mcp.TextContent).Text != "ShoutAgent says HI THERE." {
		t.Fatalf("chat: isError %v, %v", res.IsError, res.StructuredContent)
	}
	// The client library hands notifications to the handler on its own
	// goroutine: one sent before the result may be handled after it.
	var got []string
	if !fixture.Within(fixture.WaitTimeout, func() bool { got = notes.list(); return len(got) > 0 }) {
		t.Errorf("a chat turn that called an agent sent no progress notification")
	}
	t.Logf("chat progress: %q", got)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"message": "  "}})
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := res.StructuredContent.(map[string]any); !res.IsError || sc["code"] != schemas.CodeInvalidRequest {
		t.Fatalf("an empty chat message: %v", res.StructuredContent)
	}
}
