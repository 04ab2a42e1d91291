package metrics

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmesh/agentmesh/llm"
)

// PolicyCounter counts what the policies of an llm.Guard did, as
// agentmesh_policy_decisions_total by policy, target (request, response,
// tool) and action (allow, rewrite, redact, refuse, approval). Give its Observe to
// llm.WithPolicyObserver. It is registered apart from Observer (and is not
// in Names), as only a process with a guard has it.
type PolicyCounter struct {
	decisions *prometheus.CounterVec
}

// NewPolicyCounter registers the counter with reg.
func NewPolicyCounter(reg prometheus.Registerer) (*PolicyCounter, error) {
	c := &PolicyCounter{decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "policy_decisions_total",
		Help: "What the model and tool policies decided, by policy, target (request, response, tool) and action (allow, rewrite, redact, refuse, approval)."},
		[]string{"policy", "target", "action"})}
	if err := reg.Register(c.decisions); err != nil {
		return nil, fmt.Errorf("metrics: registering the policy counter: %w (one per registry)", err)
	}
	return c, nil
}

// Observe counts one decision.
func (c *PolicyCounter) Observe(_ context.Context, ev llm.PolicyEvent) {
	action := string(ev.Action)
	if ev.Action == llm.Allow {
		action = "allow"
	}
	c.decisions.WithLabelValues(ev.Policy, ev.Target, action).Inc()
}
