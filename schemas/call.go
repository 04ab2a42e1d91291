package schemas

import (
	"context"
	"fmt"
	"strings"
)

// CallTarget names the agent an agent-to-agent call goes to: by name, or
// by what it offers (a capability, a data type among its outputs, or both).
// A name wins over the rest.
type CallTarget struct {
	Agent      string `json:"agent,omitempty"`
	Capability string `json:"capability,omitempty"`
	Output     string `json:"output,omitempty"` // a data type one of its outputs has
}

// AgentNamed targets the agent called name.
func AgentNamed(name string) CallTarget { return CallTarget{Agent: name} }

// Offering targets an agent one of whose outputs is of dataType.
func Offering(dataType string) CallTarget { return CallTarget{Output: dataType} }

// String says what the target asks for: `agent "X"`, or
// `an agent with capability C offering an output of type T`.
func (t CallTarget) String() string {
	if t.Agent != "" {
		return fmt.Sprintf("agent %q", t.Agent)
	}
	var parts []string
	if t.Capability != "" {
		parts = append(parts, "with capability "+t.Capability)
	}
	if t.Output != "" {
		parts = append(parts, "offering an output of type "+t.Output)
	}
	if len(parts) == 0 {
		return "no agent (name an agent, a capability or an output type)"
	}
	return "an agent " + strings.Join(parts, " ")
}

// Offers reports whether c fits a target that names no agent: its
// capability matches (when asked for) and one of its outputs has the data
// type (when asked for).
func (t CallTarget) Offers(c AgentContract) bool {
	if t.Agent != "" {
		return c.Name == t.Agent
	}
	if t.Capability == "" && t.Output == "" {
		return false
	}
	if t.Capability != "" && !strings.EqualFold(c.Capability, t.Capability) {
		return false
	}
	if t.Output == "" {
		return true
	}
	for _, o := range c.Outputs {
		if o.DataType == t.Output {
			return true
		}
	}
	return false
}

// Caller calls another agent through the mesh on behalf of the task being
// executed, and returns the callee's result. An error means the call could
// not be made or the callee failed; when the callee answered, the error
// matches its code (errors.Is(err, &ResultError{Code: CodeTimeout})) and
// the result is the callee's. The agent runtime puts one on every
// execution context it hands to Execute.
type Caller interface {
	Call(ctx context.Context, target CallTarget, task TaskRequest) (AgentResult, error)
}

// CallFunc adapts a function to a Caller.
type CallFunc func(ctx context.Context, target CallTarget, task TaskRequest) (AgentResult, error)

// Call calls f.
func (f CallFunc) Call(ctx context.Context, target CallTarget, task TaskRequest) (AgentResult, error) {
	return f(ctx, target, task)
}

// SetCaller sets the Caller that Call uses.
func (c *ExecutionContext) SetCaller(cl Caller) {
	c.mu.Lock()
	c.caller = cl
	c.mu.Unlock()
}

// Call calls another agent through the mesh (see Caller): by name with
// AgentNamed, or by what it offers with Offering or a CallTarget. Outside
// an agent runtime (a context with no Caller) it returns ErrNoCaller.
func (c *ExecutionContext) Call(ctx context.Context, target CallTarget, task TaskRequest) (AgentResult, error) {
	c.mu.RLock()
	cl := c.caller
	c.mu.RUnlock()
	if cl == nil {
		return AgentResult{}, fmt.Errorf("%w: calling %s", ErrNoCaller, target)
	}
	return cl.Call(ctx, target, task)
}
