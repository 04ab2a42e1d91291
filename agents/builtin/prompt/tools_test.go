package prompt_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/prompt"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// echoTool answers with its arguments.
type echoTool struct{ calls int }

func (e *echoTool) Name() string                 { return "echo" }
func (e *echoTool) Description() string          { return "echoes" }
func (e *echoTool) InputSchema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (e *echoTool) Call(_ context.Context, args json.RawMessage) (string, error) {
	e.calls++
	return "echo " + string(args), nil
}

func toolAgent(t *testing.T, yaml string, srv *llmtest.Server, tools ...prompt.Tool) *prompt.Agent {
	t.Helper()
	cfg, err := prompt.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	c, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	a, err := prompt.New(cfg, nil, prompt.WithTools(c, tools...))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

const toolYAML = `
name: Echoer
description: Calls echo.
capability: ANALYSIS
system_prompt: Call echo, then answer.
outputs: [{name: answer, data_type: TEXT}]
max_tool_steps: 2
`

func TestToolLoopStopsAtMaxToolSteps(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call("echo", map[string]any{"n": 1})),
		llmtest.Calls(llmtest.Call("nope", map[string]any{}), llmtest.Call("echo", "not json")),
	)
	echo := &echoTool{}
	res, err := toolAgent(t, toolYAML, srv, echo).Execute(context.Background(), schemas.NewExecutionContext(nil))
	if err != nil || res.Success || res.Error.Code != schemas.CodeAgentError || !strings.Contains(res.Error.Message, "max_tool_steps") {
		t.Fatalf("%+v, %v", res, err)
	}
	if echo.calls != 1 {
		t.Fatalf("echo called %d times, want 1 (an unknown tool and bad JSON are not called)", echo.calls)
	}
	reqs := srv.Requests()
	tools := reqs[1].MessagesOf("tool")
	if len(tools) != 1 || tools[0].Content != `echo {"n":1}` {
		t.Fatalf("second request's tool messages %+v", tools)
	}
}

func TestToolLoopAnswersAndSumsUsage(t *testing.T) {
	srv := llmtest.New(t, llmtest.Calls(llmtest.Call("echo", map[string]any{})), llmtest.Answer("done"))
	res, err := toolAgent(t, toolYAML, srv, &echoTool{}).Execute(context.Background(), schemas.NewExecutionContext(nil))
	if err != nil || !res.Success {
		t.Fatalf("%+v, %v", res, err)
	}
	if got, _ := res.Outputs["answer"].Text(); got != "done" || res.Metrics.Tokens.Prompt != 200 {
		t.Fatalf("answer %q, tokens %+v (two model calls of 100 prompt tokens)", got, res.Metrics.Tokens)
	}
}

func TestConfigMCPValidation(t *testing.T) {
	_, err := prompt.Parse([]byte(strings.Replace(toolYAML, "max_tool_steps: 2\n", "", 1) + `
mcp:
  - {command: "node s.mjs", url: "http://x/mcp"}
  - {tools: [a]}
max_tool_steps: -1
`))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"mcp[0]: give exactly one of command", "mcp[1]: give exactly one", "max_tool_steps is -1"} {
		if !strings.Contains(err.Error(), want) || !errors.Is(err, prompt.ErrInvalidConfig) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
