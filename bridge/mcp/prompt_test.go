package mcp_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/agents/builtin/prompt"
	meshmcp "github.com/agentmesh/agentmesh/bridge/mcp"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
)

var _ prompt.Tool = (*meshmcp.RemoteTool)(nil)

// TestPromptAgentCallsMCPTools gives a PromptAgent the word_count tool of
// the TypeScript server: the scripted model calls it, reads its result and
// answers; a tool error goes back to the model as text.
func TestPromptAgentCallsMCPTools(t *testing.T) {
	m := startMesh(t)
	r := dialExample(t)
	tools, err := r.Tools(context.Background(), "word_count", "fail")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Tools(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), "it offers") {
		t.Fatalf("an unknown tool name: %v", err)
	}
	model := llmtest.New(t,
		llmtest.Calls(llmtest.Call("word_count", map[string]any{"text": "one two two"}), llmtest.Call("fail", map[string]any{"reason": "why not"})),
		llmtest.Answer("The text has 3 words."),
	)
	c, err := llm.New(model.Config())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := prompt.Parse([]byte(`
name: Counter
description: Counts words with an MCP tool.
capability: ANALYSIS
system_prompt: Use the tools to answer.
inputs: [{name: text, data_type: TEXT, required: true}]
outputs: [{name: answer, data_type: TEXT}]
mcp: [{command: "node server.mjs", tools: [word_count, fail]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	var pts []prompt.Tool
	for _, tl := range tools {
		pts = append(pts, tl)
	}
	ag, err := prompt.New(cfg, nil, prompt.WithTools(c, pts...))
	if err != nil {
		t.Fatal(err)
	}
	m.runAgent(t, ag)
	m.mcp.Sync()
	cs := connect(t, m.mcp, nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "Counter", Arguments: map[string]any{"text": "one two two"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.Content[len(res.Content)-1].(*mcp.TextContent).Text != "The text has 3 words." {
		t.Fatalf("result %+v", res.Content)
	}
	reqs := model.Requests()
	if len(reqs) != 2 || !slices.Equal(reqs[0].ToolNames(), []string{"word_count", "fail"}) {
		t.Fatalf("%d requests; tools shown %v", len(reqs), reqs[0].ToolNames())
	}
	var results []string
	for _, msg := range reqs[1].MessagesOf("tool") {
		results = append(results, msg.Content)
	}
	if !slices.Equal(results, []string{"3 words; most frequent: two, one", "error: failed on purpose: why not"}) {
		t.Fatalf("tool results the model read: %q", results)
	}
}
