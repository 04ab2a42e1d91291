package prompt_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/prompt"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

const guardedYAML = toolYAML + `policy:
  redact: [emails]
`

// The config's policy takes addresses out of the prompt and the answer.
func TestPolicyRedactsThePromptAndTheOutput(t *testing.T) {
	srv := llmtest.New(t, llmtest.Answer("Mail ann@example.com."))
	a := structuredAgent(t, strings.Replace(guardedYAML, "max_tool_steps: 2\n", "inputs: [{name: note, data_type: TEXT}]\n", 1), srv.Config())
	ec := schemas.NewExecutionContext(nil)
	_ = ec.Put("note", schemas.TextValue("from bob@corp.io", "test"))
	res, err := a.Execute(context.Background(), ec)
	if err != nil || !res.Success {
		t.Fatalf("%+v, %v", res, err)
	}
	if text, _ := res.Outputs["answer"].Text(); text != "Mail [redacted email]." {
		t.Errorf("output %q", text)
	}
	if sent := srv.Requests()[0].MessagesOf("user")[0].Content; strings.Contains(sent, "bob@corp.io") || !strings.Contains(sent, "[redacted email]") {
		t.Errorf("the model was sent %q", sent)
	}
}

// A refused tool is not called; the model reads why and answers without it.
func TestPolicyRefusesATool(t *testing.T) {
	srv := llmtest.New(t, llmtest.Calls(llmtest.Call("echo", map[string]any{"n": 1})), llmtest.Answer("done without echo"))
	echo := &echoTool{}
	a := toolAgent(t, toolYAML+"policy: {refuse_tools: [echo]}\n", srv, echo)
	res, err := a.Execute(context.Background(), schemas.NewExecutionContext(nil))
	if err != nil || !res.Success || echo.calls != 0 {
		t.Fatalf("%+v, %v, %d calls", res, err, echo.calls)
	}
	tool := srv.Requests()[1].MessagesOf("tool")[0].Content
	if !strings.Contains(tool, "refused by policy refuse-tools") || !strings.Contains(tool, "echo may not be called") {
		t.Errorf("the model read %q", tool)
	}
}

// A tool held for approval ends the task approval_required without
// calling it; the task sent again with approved: true calls it.
func TestPolicyHoldsAToolForApproval(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call("echo", map[string]any{"n": 1})),
		llmtest.Calls(llmtest.Call("echo", map[string]any{"n": 1})), llmtest.Answer("echoed"))
	echo := &echoTool{}
	a := toolAgent(t, toolYAML+"policy: {approve_tools: [echo]}\n", srv, echo)
	res, err := a.Execute(context.Background(), schemas.NewExecutionContext(nil))
	if err != nil || res.Success || res.Error.Code != schemas.CodeApprovalRequired || echo.calls != 0 ||
		!strings.Contains(res.Error.Message, `{"n":1}`) || !strings.Contains(res.Error.Message, "approved: true") {
		t.Fatalf("%+v, %v, %d calls", res, err, echo.calls)
	}
	ec := schemas.NewExecutionContext(nil)
	ec.SetParams(map[string]any{"approved": true})
	res, err = a.Execute(context.Background(), ec)
	if err != nil || !res.Success || echo.calls != 1 {
		t.Fatalf("approved: %+v, %v, %d calls", res, err, echo.calls)
	}
}

// A policy registered in Go refuses the model call: the task ends
// policy_refused with the reason, and nothing is sent.
func TestGuardRefusesTheModelCall(t *testing.T) {
	srv := llmtest.New(t)
	g := llm.NewGuard([]llm.Policy{llm.PolicyFuncs{ID: "closed", OnRequest: func(context.Context, *llm.Request) llm.Decision {
		return llm.Decision{Action: llm.Refuse, Reason: "the model is closed for maintenance"}
	}}})
	cfg, err := prompt.Parse([]byte(toolYAML))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := llm.New(srv.Config())
	res, err := mustNew(t, cfg, c, g).Execute(context.Background(), schemas.NewExecutionContext(nil))
	if err != nil || res.Success || res.Error.Code != schemas.CodeRefused || !strings.Contains(res.Error.Message, "closed for maintenance") {
		t.Fatalf("%+v, %v", res, err)
	}
	if len(srv.Requests()) != 0 {
		t.Errorf("%d requests sent", len(srv.Requests()))
	}
}

func mustNew(t *testing.T, cfg prompt.Config, c *llm.Client, g *llm.Guard) *prompt.Agent {
	t.Helper()
	a, err := prompt.New(cfg, c, prompt.WithGuard(g))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// An agent whose policy holds tools for approval takes the param a person's
// approval comes back with, even when its params schema allows no other.
func TestApproveToolsAcceptsTheApprovedParam(t *testing.T) {
	cfg, err := prompt.Parse([]byte(toolYAML + `policy: {approve_tools: [echo]}
params: {type: object, properties: {mood: {type: string}}, additionalProperties: false}
`))
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Contract()
	if err := c.ValidateParams(map[string]any{"approved": true, "mood": "calm"}); err != nil {
		t.Error(err)
	}
	if err := c.ValidateParams(map[string]any{"loud": true}); err == nil {
		t.Error("an undeclared param was accepted")
	}
}
