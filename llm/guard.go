package llm

import (
	"context"
	"strings"
	"unicode"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmesh/agentmesh/schemas"
)

// PolicyEvent is one thing a policy did, for metrics and logs: Target is
// "request", "response" or "tool", Tool the tool's name for a tool call.
type PolicyEvent struct {
	Policy string
	Target string
	Tool   string
	Action Action
	Reason string
}

// Guard applies policies, in order, to model calls (Guard.Model) and tool
// calls (Guard.Tool), and reports each decision other than Allow to its
// observers and as an event on ctx's span. It is safe for concurrent use
// and never changes after NewGuard.
type Guard struct {
	policies []Policy
	observe  []func(context.Context, PolicyEvent)
}

// GuardOption configures a Guard.
type GuardOption func(*Guard)

// WithPolicyObserver has fn called with every decision other than Allow
// (observe/metrics.PolicyCounter counts them).
func WithPolicyObserver(fn func(context.Context, PolicyEvent)) GuardOption {
	return func(g *Guard) { g.observe = append(g.observe, fn) }
}

// NewGuard returns a guard of policies. Options: WithPolicyObserver.
func NewGuard(policies []Policy, opts ...GuardOption) *Guard {
	g := &Guard{policies: append([]Policy(nil), policies...)}
	for _, o := range opts {
		o(g)
	}
	return g
}

// Policies is the number of policies the guard applies.
func (g *Guard) Policies() int {
	if g == nil {
		return 0
	}
	return len(g.policies)
}

func (g *Guard) report(ctx context.Context, p Policy, target, tool string, d Decision) {
	ev := PolicyEvent{Policy: p.Name(), Target: target, Tool: tool, Action: d.Action, Reason: d.Reason}
	trace.SpanFromContext(ctx).AddEvent("agentmesh.policy", trace.WithAttributes(
		attribute.String("agentmesh.policy.name", ev.Policy), attribute.String("agentmesh.policy.target", target),
		attribute.String("agentmesh.policy.action", string(d.Action)), attribute.String("agentmesh.policy.tool", tool),
		attribute.String("agentmesh.policy.reason", d.Reason)))
	for _, fn := range g.observe {
		fn(ctx, ev)
	}
}

// Tool asks every policy about a tool or agent call the model made; a
// policy may rewrite its arguments. It returns nil to call it, a
// *RefusedError (ErrRefused) whose reason the model should read, or an
// *ApprovalError (ErrApprovalRequired) when a person must approve it first.
func (g *Guard) Tool(ctx context.Context, call *ToolCall) error {
	if g == nil {
		return nil
	}
	for _, p := range g.policies {
		d := p.Tool(ctx, call)
		if d.Action == Allow {
			continue
		}
		g.report(ctx, p, "tool", call.Name, d)
		switch d.Action {
		case Refuse:
			return &RefusedError{Policy: p.Name(), Target: call.Name, Reason: d.Reason}
		case Approval:
			return &ApprovalError{Policy: p.Name(), Tool: call.Name, Reason: d.Reason}
		}
	}
	return nil
}

// request applies the policies to a request, which they may rewrite.
func (g *Guard) request(ctx context.Context, req *Request) error {
	for _, p := range g.policies {
		d := p.Request(ctx, req)
		if d.Action == Allow {
			continue
		}
		g.report(ctx, p, "request", "", d)
		if d.Action == Refuse || d.Action == Approval {
			return &RefusedError{Policy: p.Name(), Target: "model call", Reason: d.Reason}
		}
	}
	return nil
}

// response applies the policies to an answer, which they may rewrite;
// report is false for a piece of a stream, whose answer is reported whole.
func (g *Guard) response(ctx context.Context, resp *Response, report bool) error {
	for _, p := range g.policies {
		d := p.Response(ctx, resp)
		if d.Action == Allow {
			continue
		}
		if report {
			g.report(ctx, p, "response", "", d)
		}
		if d.Action == Refuse || d.Action == Approval {
			return &RefusedError{Policy: p.Name(), Target: "answer", Reason: d.Reason}
		}
	}
	return nil
}

// Model returns m with every call through the guard's policies: the
// request before m sees it, the answer before the caller does. A refused
// request is not sent; a refused answer is not returned (the usage of the
// call is). Streamed text goes out a word at a time, each piece through
// the policies' Response as an answer of that text alone, so a pattern
// without spaces (a key, an address) is redacted in the stream too; a
// refused piece ends the stream, not the call. The result is a
// TextModel too (Complete). A guard without policies returns m.
func (g *Guard) Model(m Model) Model {
	if g.Policies() == 0 {
		return m
	}
	return &guarded{next: m, g: g}
}

type guarded struct {
	next Model
	g    *Guard
}

func (m *guarded) Chat(ctx context.Context, req Request) (Response, Usage, error) {
	return m.Stream(ctx, req, nil)
}

func (m *guarded) Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, Usage, error) {
	req.Messages = append([]Message(nil), req.Messages...) // policies rewrite the copy, not the caller's
	if err := m.g.request(ctx, &req); err != nil {
		return Response{}, Usage{Model: req.Model}, err
	}
	var w *wordBuffer
	if onDelta != nil {
		w = &wordBuffer{ctx: ctx, g: m.g, out: onDelta}
		onDelta = w.add
	}
	resp, usage, err := m.next.Stream(ctx, req, onDelta)
	if w != nil {
		w.flush()
	}
	if err != nil {
		return resp, usage, err
	}
	if err := m.g.response(ctx, &resp, true); err != nil {
		return Response{}, usage, err
	}
	return resp, usage, nil
}

// Complete is Client.Complete through the guard.
func (m *guarded) Complete(ctx context.Context, system, user string) (string, schemas.Usage, error) {
	var msgs []Message
	if system != "" {
		msgs = append(msgs, Message{Role: RoleSystem, Content: system})
	}
	msgs = append(msgs, Message{Role: RoleUser, Content: user})
	resp, usage, err := m.Chat(ctx, Request{Messages: msgs})
	return resp.Message.Content, usage.Report(), err
}

// wordBuffer holds streamed text until a space, so a policy sees whole
// words; tool-call pieces pass as they come.
type wordBuffer struct {
	ctx     context.Context
	g       *Guard
	out     func(Delta)
	pending strings.Builder
	stopped bool
}

func (w *wordBuffer) add(d Delta) {
	if d.Text == "" {
		if !w.stopped {
			w.out(d)
		}
		return
	}
	w.pending.WriteString(d.Text)
	s := w.pending.String()
	cut := strings.LastIndexFunc(s, unicode.IsSpace)
	if cut < 0 {
		return
	}
	w.pending.Reset()
	w.pending.WriteString(s[cut+1:])
	w.send(s[:cut+1])
}

func (w *wordBuffer) flush() {
	if w.pending.Len() > 0 {
		w.send(w.pending.String())
		w.pending.Reset()
	}
}

func (w *wordBuffer) send(text string) {
	if w.stopped {
		return
	}
	piece := Response{Message: Message{Role: RoleAssistant, Content: text}}
	if w.g.response(w.ctx, &piece, false) != nil {
		w.stopped = true
		return
	}
	w.out(Delta{Text: piece.Message.Content})
}
