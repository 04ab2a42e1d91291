package llm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Environment variables of PolicyRulesFromEnv: comma-separated lists.
const (
	EnvPolicyRefuseTools  = "AGENTMESH_POLICY_REFUSE_TOOLS"  // tools and agents the model may not call
	EnvPolicyApproveTools = "AGENTMESH_POLICY_APPROVE_TOOLS" // tools and agents a person approves first
	EnvPolicyRedact       = "AGENTMESH_POLICY_REDACT"        // api_keys, emails, or regular expressions
)

// Redaction patterns by name, for PolicyRules.Redact.
var redactions = map[string]*regexp.Regexp{
	// OpenAI, Anthropic, Google, AWS, GitHub and Slack keys. No pattern
	// matches across a space, so a stream cut at spaces is redacted as the
	// whole answer is (Guard.Model); one of your own that does makes the
	// stream hold back text (streamHold).
	"api_keys": regexp.MustCompile(`\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}|AIza[0-9A-Za-z_-]{35}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|xox[abprs]-[A-Za-z0-9-]{10,})`),
	"emails":   regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`),
}

// maxRedactPasses bounds how many times the redact rules go over a text.
const maxRedactPasses = 4

// PolicyRules are the common policies, set without code (a PromptAgent's
// policy: block, AGENTMESH_POLICY_* for the chat): tools and agents the
// model may not call, those a person approves first, and patterns redacted
// from every prompt, answer and tool-call argument.
type PolicyRules struct {
	RefuseTools  []string `yaml:"refuse_tools" json:"refuse_tools,omitempty"`
	ApproveTools []string `yaml:"approve_tools" json:"approve_tools,omitempty"`
	// Redact names patterns: "api_keys", "emails", or a regular expression
	// (Go syntax); each match becomes "[redacted NAME]". Streamed text is
	// redacted a word at a time: a pattern of your own that matches across
	// spaces is applied to the whole answer only.
	Redact []string `yaml:"redact" json:"redact,omitempty"`
}

// Empty reports whether the rules set nothing.
func (r PolicyRules) Empty() bool {
	return len(r.RefuseTools) == 0 && len(r.ApproveTools) == 0 && len(r.Redact) == 0
}

// PolicyRulesFromEnv reads AGENTMESH_POLICY_REFUSE_TOOLS,
// AGENTMESH_POLICY_APPROVE_TOOLS and AGENTMESH_POLICY_REDACT, and checks
// them.
func PolicyRulesFromEnv() (PolicyRules, error) {
	list := func(name string) []string {
		var out []string
		for _, s := range strings.Split(os.Getenv(name), ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	r := PolicyRules{RefuseTools: list(EnvPolicyRefuseTools), ApproveTools: list(EnvPolicyApproveTools), Redact: list(EnvPolicyRedact)}
	if _, err := r.Policies(); err != nil {
		return PolicyRules{}, err
	}
	return r, nil
}

// Validate reports every bad rule at once: a regular expression that does
// not compile, a tool both refused and approved.
func (r PolicyRules) Validate() error {
	_, err := r.Policies()
	return err
}

// Policies are the rules as policies: "refuse-tools", "approve-tools" and
// "redact", those the rules use, in that order.
func (r PolicyRules) Policies() ([]Policy, error) {
	var errs []error
	for _, t := range r.ApproveTools {
		if slices.Contains(r.RefuseTools, t) {
			errs = append(errs, fmt.Errorf("tool %q is both refused and approved: keep it in one of refuse_tools and approve_tools", t))
		}
	}
	type pattern struct {
		name string
		re   *regexp.Regexp
	}
	var patterns []pattern
	hold := 0 // what a stream holds back for the patterns that match across spaces
	for _, s := range r.Redact {
		if re, ok := redactions[s]; ok {
			patterns = append(patterns, pattern{strings.TrimSuffix(s, "s"), re})
			continue
		}
		re, err := regexp.Compile(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("redact %q is neither api_keys, emails nor a regular expression: %v", s, err))
			continue
		}
		patterns = append(patterns, pattern{"text", re})
		hold = max(hold, streamHold(s))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: policy: %w", ErrInvalidConfig, err)
	}
	var out []Policy
	if len(r.RefuseTools) > 0 {
		refused := slices.Clone(r.RefuseTools)
		out = append(out, PolicyFuncs{ID: "refuse-tools", OnTool: func(_ context.Context, call *ToolCall) Decision {
			if slices.Contains(refused, call.Name) {
				return Decision{Action: Refuse, Reason: fmt.Sprintf("%s may not be called here; do without it", call.Name)}
			}
			return Decision{}
		}})
	}
	if len(r.ApproveTools) > 0 {
		held := slices.Clone(r.ApproveTools)
		out = append(out, PolicyFuncs{ID: "approve-tools", OnTool: func(_ context.Context, call *ToolCall) Decision {
			if slices.Contains(held, call.Name) {
				return Decision{Action: Approval, Reason: fmt.Sprintf("a person approves each call of %s, with arguments %s", call.Name, call.Arguments)}
			}
			return Decision{}
		}})
	}
	if len(patterns) > 0 {
		redact := func(s string, n *int) string {
			// A redaction can make what follows it start a word, and so a
			// key (`AKIA…AKIA…`): the text is redacted again until nothing
			// more matches, a few times at most.
			for range maxRedactPasses {
				before := *n
				for _, p := range patterns {
					s = p.re.ReplaceAllStringFunc(s, func(string) string { *n++; return "[redacted " + p.name + "]" })
				}
				if *n == before {
					break
				}
			}
			return s
		}
		message := func(m *Message, n *int) {
			m.Content = redact(m.Content, n)
			if len(m.ToolCalls) > 0 {
				m.ToolCalls = slices.Clone(m.ToolCalls)
				for i := range m.ToolCalls {
					m.ToolCalls[i].Arguments = redact(m.ToolCalls[i].Arguments, n)
				}
			}
		}
		decision := func(n int) Decision {
			if n == 0 {
				return Decision{}
			}
			return Decision{Action: Redact, Reason: fmt.Sprintf("redacted %d matches", n)}
		}
		out = append(out, PolicyFuncs{ID: "redact", Hold: hold,
			OnRequest: func(_ context.Context, req *Request) Decision {
				n := 0
				for i := range req.Messages {
					message(&req.Messages[i], &n)
				}
				return decision(n)
			},
			OnResponse: func(_ context.Context, resp *Response) Decision {
				n := 0
				message(&resp.Message, &n)
				return decision(n)
			},
			OnTool: func(_ context.Context, call *ToolCall) Decision {
				n := 0
				call.Arguments = redact(call.Arguments, &n)
				return decision(n)
			},
		})
	}
	return out, nil
}
