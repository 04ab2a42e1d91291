package metrics_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/observe/metrics"
)

func TestPolicyCounterCountsDecisions(t *testing.T) {
	reg := prometheus.NewRegistry()
	c, err := metrics.NewPolicyCounter(reg)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := llm.PolicyRules{RefuseTools: []string{"rm"}, Redact: []string{"emails"}}.Policies()
	if err != nil {
		t.Fatal(err)
	}
	g := llm.NewGuard(ps, llm.WithPolicyObserver(c.Observe))
	ctx := context.Background()
	_ = g.Tool(ctx, &llm.ToolCall{Name: "rm"})
	_ = g.Tool(ctx, &llm.ToolCall{Name: "rm"})
	_ = g.Tool(ctx, &llm.ToolCall{Name: "mail", Arguments: `"x@y.io"`})
	_ = g.Tool(ctx, &llm.ToolCall{Name: "ls"})
	n, err := testutil.GatherAndCount(reg, "agentmesh_policy_decisions_total")
	if err != nil || n != 2 {
		t.Fatalf("%d series, %v", n, err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP agentmesh_policy_decisions_total What the model and tool policies did, by policy, target (request, response, tool) and action (rewrite, refuse, approval).
# TYPE agentmesh_policy_decisions_total counter
agentmesh_policy_decisions_total{action="refuse",policy="refuse-tools",target="tool"} 2
agentmesh_policy_decisions_total{action="rewrite",policy="redact",target="tool"} 1
`), "agentmesh_policy_decisions_total"); err != nil {
		t.Error(err)
	}
	if _, err := metrics.NewPolicyCounter(reg); err == nil {
		t.Error("a second counter on one registry was accepted")
	}
}
