package mcp_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/agents/builtin/prompt"
	meshmcp "github.com/agentmesh/agentmesh/bridge/mcp"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
)

// textNotes keeps the progress notifications marked as a model's text.
type textNotes struct {
	mu     sync.Mutex
	text   []string
	others int
}

func (n *textNotes) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		n.mu.Lock()
		defer n.mu.Unlock()
		if r.Params.Meta[meshmcp.MetaText] == true {
			n.text = append(n.text, r.Params.Message)
		} else {
			n.others++
		}
	}}
}

// The chat tool sends the text its model writes, as it writes it, as
// progress notifications marked agentmesh.dev/text, before the answer.
func TestChatToolStreamsTheModelsText(t *testing.T) {
	m := startMesh(t)
	chunks := []string{"Nothing", " to shout", " today."}
	model := llmtest.New(t, llmtest.Reply{Content: strings.Join(chunks, ""), Chunks: chunks})
	llmc, err := llm.New(model.Config())
	if err != nil {
		t.Fatal(err)
	}
	m.orchestrate(t, chat.WithLLM(llmc))
	notes := &textNotes{}
	cs := connect(t, m.mcp, notes.options())
	params := &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"message": "anything to shout?"}}
	params.SetProgressToken("t-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("%+v, %v", res, err)
	}
	var got []string // notifications are handled apart from the result
	fixture.Within(fixture.WaitTimeout, func() bool {
		notes.mu.Lock()
		got = slices.Clone(notes.text)
		notes.mu.Unlock()
		return len(got) >= len(chunks)
	})
	if !slices.Equal(got, chunks) {
		t.Errorf("text notifications %q, want %q", got, chunks)
	}
}

// An agent tool whose agent is a PromptAgent sends its model's text as
// notifications marked agentmesh.dev/text, all before the tool result.
func TestAgentToolStreamsAPromptAgentsText(t *testing.T) {
	m := startMesh(t)
	chunks := []string{"Three", " words", " in all."}
	model := llmtest.New(t, llmtest.Reply{Content: strings.Join(chunks, ""), Chunks: chunks})
	c, err := llm.New(model.Config())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := prompt.Parse([]byte(`
name: Counter
description: Counts words.
capability: ANALYSIS
system_prompt: Count the words.
inputs: [{name: text, data_type: TEXT, required: true}]
outputs: [{name: answer, data_type: TEXT}]
`))
	if err != nil {
		t.Fatal(err)
	}
	ag, err := prompt.New(cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	m.runAgent(t, ag)
	m.mcp.Sync()
	notes := &textNotes{}
	cs := connect(t, m.mcp, notes.options())
	params := &mcp.CallToolParams{Name: "Counter", Arguments: map[string]any{"text": "one two two"}}
	params.SetProgressToken("t-2")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("%+v, %v", res, err)
	}
	var got []string // notifications are handled apart from the result
	fixture.Within(fixture.WaitTimeout, func() bool {
		notes.mu.Lock()
		got = slices.Clone(notes.text)
		notes.mu.Unlock()
		return len(got) >= len(chunks)
	})
	if !slices.Equal(got, chunks) {
		t.Errorf("text notifications %q, want %q", got, chunks)
	}
}
