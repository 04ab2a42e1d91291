package metrics_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/observe/metrics"
)

// What a guard's policies decide (allowed, rewritten, redacted, refused,
// held for approval) is counted per policy, target and action, and served
// on the metrics endpoint in Prometheus's text format, line for line.
func TestPolicyCounterOnTheEndpoint(t *testing.T) {
	reg := metrics.NewRegistry()
	c, err := metrics.NewPolicyCounter(reg)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := llm.PolicyRules{RefuseTools: []string{"rm"}, ApproveTools: []string{"mail"}, Redact: []string{"emails"}}.Policies()
	if err != nil {
		t.Fatal(err)
	}
	upper := llm.PolicyFuncs{ID: "upper", OnTool: func(_ context.Context, call *llm.ToolCall) llm.Decision {
		if call.Name == "shout" {
			call.Arguments = strings.ToUpper(call.Arguments)
			return llm.Decision{Action: llm.Rewrite}
		}
		return llm.Decision{}
	}}
	g := llm.NewGuard(append(ps, upper), llm.WithPolicyObserver(c.Observe))
	ctx := context.Background()
	_ = g.Tool(ctx, &llm.ToolCall{Name: "rm"})                        // refused by refuse-tools
	_ = g.Tool(ctx, &llm.ToolCall{Name: "mail"})                      // allowed by refuse-tools, held by approve-tools
	_ = g.Tool(ctx, &llm.ToolCall{Name: "ls", Arguments: `"x@y.io"`}) // allowed, allowed, redacted, allowed
	_ = g.Tool(ctx, &llm.ToolCall{Name: "shout", Arguments: `"hey"`}) // allowed, allowed, allowed, rewritten

	ep, err := metrics.Serve("127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ep.Close() })
	resp, err := http.Get(ep.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.Contains(line, "agentmesh_policy_decisions_total") {
			got = append(got, line)
		}
	}
	want := []string{
		"# HELP agentmesh_policy_decisions_total What the model and tool policies decided, by policy, target (request, response, tool) and action (allow, rewrite, redact, refuse, approval).",
		"# TYPE agentmesh_policy_decisions_total counter",
		`agentmesh_policy_decisions_total{action="allow",policy="approve-tools",target="tool"} 2`,
		`agentmesh_policy_decisions_total{action="allow",policy="redact",target="tool"} 1`,
		`agentmesh_policy_decisions_total{action="allow",policy="refuse-tools",target="tool"} 3`,
		`agentmesh_policy_decisions_total{action="allow",policy="upper",target="tool"} 1`,
		`agentmesh_policy_decisions_total{action="approval",policy="approve-tools",target="tool"} 1`,
		`agentmesh_policy_decisions_total{action="redact",policy="redact",target="tool"} 1`,
		`agentmesh_policy_decisions_total{action="refuse",policy="refuse-tools",target="tool"} 1`,
		`agentmesh_policy_decisions_total{action="rewrite",policy="upper",target="tool"} 1`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("/metrics serves\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := metrics.NewPolicyCounter(reg); err == nil {
		t.Error("a second counter on one registry was accepted")
	}
}
