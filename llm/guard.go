package llm

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

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
// calls (Guard.Tool), and reports each decision to its observers, counts
// them in attributes of ctx's span (AttrPolicyAllowed, ...), and makes
// each other than Allow an event on that span. It is safe for concurrent use
// and never changes after NewGuard.
type Guard struct {
	policies []Policy
	observe  []func(context.Context, PolicyEvent)
}

// GuardOption configures a Guard.
type GuardOption func(*Guard)

// WithPolicyObserver has fn called with every decision of every policy
// on a request, an answer or a tool call, Allow included (the pieces of a
// stream are not counted apart: their answer is, whole);
// observe/metrics.PolicyCounter counts them.
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

// The span attributes that count the decisions of a guard's policies
// under a span (one per policy and request, answer or tool call).
const (
	AttrPolicyAllowed   = attribute.Key("agentmesh.policy.allowed")
	AttrPolicyRewritten = attribute.Key("agentmesh.policy.rewritten")
	AttrPolicyRedacted  = attribute.Key("agentmesh.policy.redacted")
	AttrPolicyRefused   = attribute.Key("agentmesh.policy.refused")
	AttrPolicyApprovals = attribute.Key("agentmesh.policy.approvals")
)

// tally counts the decisions of one check (a request, an answer, a tool
// call) by action, for the span's attributes.
type tally struct{ allowed, rewritten, redacted, refused, approvals int64 }

func (t *tally) add(a Action) {
	switch a {
	case Allow:
		t.allowed++
	case Rewrite:
		t.rewritten++
	case Redact:
		t.redacted++
	case Refuse:
		t.refused++
	case Approval:
		t.approvals++
	}
}

// record adds t to the counts on ctx's span. The counts already there are
// read back from the span (an OpenTelemetry SDK span can), so a span under
// which several calls are checked (a chat turn's, a task's) holds their
// sum; the checks under one span are made one after another.
func (t tally) record(ctx context.Context) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	counts := map[attribute.Key]int64{AttrPolicyAllowed: t.allowed, AttrPolicyRewritten: t.rewritten,
		AttrPolicyRedacted: t.redacted, AttrPolicyRefused: t.refused, AttrPolicyApprovals: t.approvals}
	if ro, ok := span.(interface{ Attributes() []attribute.KeyValue }); ok {
		for _, kv := range ro.Attributes() {
			if n, ok := counts[kv.Key]; ok && kv.Value.Type() == attribute.INT64 {
				counts[kv.Key] = n + kv.Value.AsInt64()
			}
		}
	}
	attrs := make([]attribute.KeyValue, 0, len(counts))
	for k, n := range counts {
		attrs = append(attrs, k.Int64(n))
	}
	span.SetAttributes(attrs...)
}

// decided tallies one policy's decision and tells the observers; one other
// than Allow is also an event on ctx's span.
func (g *Guard) decided(ctx context.Context, t *tally, p Policy, target, tool string, d Decision) {
	t.add(d.Action)
	ev := PolicyEvent{Policy: p.Name(), Target: target, Tool: tool, Action: d.Action, Reason: d.Reason}
	if d.Action != Allow {
		trace.SpanFromContext(ctx).AddEvent("agentmesh.policy", trace.WithAttributes(
			attribute.String("agentmesh.policy.name", ev.Policy), attribute.String("agentmesh.policy.target", target),
			attribute.String("agentmesh.policy.action", string(d.Action)), attribute.String("agentmesh.policy.tool", tool),
			attribute.String("agentmesh.policy.reason", d.Reason)))
	}
	for _, fn := range g.observe {
		fn(ctx, ev)
	}
}

// Tool asks every policy about a tool or agent call the model made; a
// policy may rewrite its arguments. It returns nil to call it, a
// *RefusedError (ErrRefused) whose reason the model should read, or an
// *ApprovalError (ErrApprovalRequired) when a person must approve it first.
func (g *Guard) Tool(ctx context.Context, call *ToolCall) error {
	if g.Policies() == 0 {
		return nil
	}
	var t tally
	defer func() { t.record(ctx) }()
	for _, p := range g.policies {
		d := p.Tool(ctx, call)
		g.decided(ctx, &t, p, "tool", call.Name, d)
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
	var t tally
	defer func() { t.record(ctx) }()
	for _, p := range g.policies {
		d := p.Request(ctx, req)
		g.decided(ctx, &t, p, "request", "", d)
		if d.Action == Refuse || d.Action == Approval {
			return &RefusedError{Policy: p.Name(), Target: "model call", Reason: d.Reason}
		}
	}
	return nil
}

// response applies the policies to an answer, which they may rewrite;
// report is false for a piece of a stream, whose answer is reported whole.
func (g *Guard) response(ctx context.Context, resp *Response, report bool) error {
	var t tally
	if report {
		defer func() { t.record(ctx) }()
	}
	for _, p := range g.policies {
		d := p.Response(ctx, resp)
		if report {
			g.decided(ctx, &t, p, "response", "", d)
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
		w = &wordBuffer{ctx: ctx, g: m.g, out: onDelta, hold: m.g.hold()}
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

// hold is how many bytes of streamed text past the last space the
// policies need to see (StreamHolder), the most of any.
func (g *Guard) hold() int {
	n := 0
	for _, p := range g.policies {
		if h, ok := p.(StreamHolder); ok {
			n = max(n, h.StreamHold())
		}
	}
	return n
}

// wordBuffer holds streamed text until a space, so a policy sees whole
// words, and hold bytes more when a policy matches across spaces; tool-call
// pieces pass as they come.
type wordBuffer struct {
	ctx     context.Context
	g       *Guard
	out     func(Delta)
	hold    int
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
	cut := w.cut(s)
	if cut <= 0 {
		return
	}
	w.pending.Reset()
	w.pending.WriteString(s[cut:])
	w.send(s[:cut])
}

// maxCutTries bounds the spaces cut tries, going back from the last, for
// one where no policy's match crosses.
const maxCutTries = 8

// cut is how much of s may go out now: up to and with its last space,
// none of the last hold bytes included; when something is held, only at a
// space where the policies rewrite the two sides as they rewrite the whole
// (no match crosses it), trying earlier spaces. 0: nothing yet.
func (w *wordBuffer) cut(s string) int {
	end := len(s) - w.hold
	if end <= 0 {
		return 0
	}
	whole, rewritten := "", false
	for range maxCutTries {
		i := strings.LastIndexFunc(s[:end], unicode.IsSpace)
		if i < 0 {
			return 0
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		c := i + size // after the space, whatever its length in bytes
		if w.hold == 0 {
			return c
		}
		if !rewritten {
			whole, rewritten = w.rewrite(s), true
		}
		if w.rewrite(s[:c])+w.rewrite(s[c:]) == whole {
			return c
		}
		end = i
	}
	return 0
}

// rewrite is text as the policies' Response leaves it, unreported.
func (w *wordBuffer) rewrite(text string) string {
	piece := Response{Message: Message{Role: RoleAssistant, Content: text}}
	_ = w.g.response(w.ctx, &piece, false)
	return piece.Message.Content
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
