package llm_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

type policyLog struct {
	mu     sync.Mutex
	events []llm.PolicyEvent
}

func (l *policyLog) observe(_ context.Context, ev llm.PolicyEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *policyLog) count(target string, action llm.Action) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.events {
		if ev.Target == target && ev.Action == action {
			n++
		}
	}
	return n
}

func guard(t *testing.T, rules llm.PolicyRules, log *policyLog) *llm.Guard {
	t.Helper()
	ps, err := rules.Policies()
	if err != nil {
		t.Fatal(err)
	}
	return llm.NewGuard(ps, llm.WithPolicyObserver(log.observe))
}

// Keys and addresses are taken out of what the model is sent, of its
// answer, and of its streamed text even when a piece splits them.
func TestPolicyRedactsPromptsAnswersAndStreams(t *testing.T) {
	const key = "sk-proj-abcdefghijklmnop0123456789"
	answer := "Write to ann.lee@example.com today."
	srv := llmtest.New(t, llmtest.Reply{Content: answer, Chunks: []string{"Write to ann.l", "ee@exam", "ple.com today."}})
	c, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	log := &policyLog{}
	m := guard(t, llm.PolicyRules{Redact: []string{"api_keys", "emails"}}, log).Model(c)
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "my key is " + key + ", mail bob@corp.io"}}
	var streamed strings.Builder
	resp, _, err := m.Stream(context.Background(), llm.Request{Messages: msgs}, func(d llm.Delta) { streamed.WriteString(d.Text) })
	if err != nil {
		t.Fatal(err)
	}
	sent := srv.Requests()[0].MessagesOf("user")[0].Content
	if strings.Contains(sent, key) || strings.Contains(sent, "bob@corp.io") || sent != "my key is [redacted api_key], mail [redacted email]" {
		t.Errorf("the model was sent %q", sent)
	}
	if msgs[0].Content != "my key is "+key+", mail bob@corp.io" {
		t.Errorf("the caller's message was changed: %q", msgs[0].Content)
	}
	if want := "Write to [redacted email] today."; resp.Message.Content != want || streamed.String() != want {
		t.Errorf("answer %q, streamed %q, want %q", resp.Message.Content, streamed.String(), want)
	}
	if log.count("request", llm.Redact) != 1 || log.count("response", llm.Redact) != 1 || log.count("request", llm.Rewrite) != 0 {
		t.Errorf("decisions counted: %+v", log.events)
	}
}

// A refused request never reaches the model; the reason reaches the caller.
func TestPolicyRefusesAModelCall(t *testing.T) {
	srv := llmtest.New(t)
	c, _ := llm.New(srv.Config())
	log := &policyLog{}
	g := llm.NewGuard([]llm.Policy{llm.PolicyFuncs{ID: "no-secrets", OnRequest: func(_ context.Context, req *llm.Request) llm.Decision {
		if strings.Contains(req.Messages[0].Content, "secret") {
			return llm.Decision{Action: llm.Refuse, Reason: "the prompt names a secret"}
		}
		return llm.Decision{}
	}}}, llm.WithPolicyObserver(log.observe))
	_, _, err := g.Model(c).Chat(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "the secret plan"}}})
	var refused *llm.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, llm.ErrRefused) || !errors.Is(err, &schemas.ResultError{Code: schemas.CodeRefused}) ||
		!strings.Contains(err.Error(), "the prompt names a secret") || refused.Policy != "no-secrets" {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the model got %d requests", n)
	}
	if log.count("request", llm.Refuse) != 1 {
		t.Errorf("decisions: %+v", log.events)
	}
}

// Tools refused by name are refused, tools held for approval ask for it,
// others pass with secrets taken out of their arguments.
func TestPolicyRulesOnToolCalls(t *testing.T) {
	log := &policyLog{}
	g := guard(t, llm.PolicyRules{RefuseTools: []string{"delete_files"}, ApproveTools: []string{"FolderAgent"}, Redact: []string{"emails"}}, log)
	ctx := context.Background()
	err := g.Tool(ctx, &llm.ToolCall{Name: "delete_files", Arguments: `{}`})
	if !errors.Is(err, llm.ErrRefused) || !strings.Contains(err.Error(), "delete_files may not be called") {
		t.Errorf("refused tool: %v", err)
	}
	err = g.Tool(ctx, &llm.ToolCall{Name: "FolderAgent", Arguments: `{"dest":"x"}`})
	var held *llm.ApprovalError
	if !errors.As(err, &held) || !errors.Is(err, llm.ErrApprovalRequired) || held.Tool != "FolderAgent" || !strings.Contains(err.Error(), `{"dest":"x"}`) {
		t.Errorf("approval: %v", err)
	}
	call := &llm.ToolCall{Name: "Mailer", Arguments: `{"to":"a@b.org"}`}
	if err := g.Tool(ctx, call); err != nil || call.Arguments != `{"to":"[redacted email]"}` {
		t.Errorf("allowed tool: %v, %s", err, call.Arguments)
	}
	// Every policy's decision is told, allows included: refuse-tools let
	// FolderAgent and Mailer through, approve-tools Mailer.
	if log.count("tool", llm.Refuse) != 1 || log.count("tool", llm.Approval) != 1 || log.count("tool", llm.Redact) != 1 || log.count("tool", llm.Allow) != 3 {
		t.Errorf("decisions: %+v", log.events)
	}
}

func TestPolicyRulesValidate(t *testing.T) {
	err := llm.PolicyRules{RefuseTools: []string{"X"}, ApproveTools: []string{"X"}, Redact: []string{"emails", "(unclosed"}}.Validate()
	if !errors.Is(err, llm.ErrInvalidConfig) || !strings.Contains(err.Error(), `"(unclosed"`) || !strings.Contains(err.Error(), `tool "X" is both refused and approved`) {
		t.Errorf("err = %v", err)
	}
	t.Setenv(llm.EnvPolicyRedact, "emails, api_keys")
	t.Setenv(llm.EnvPolicyRefuseTools, "A,B")
	r, err := llm.PolicyRulesFromEnv()
	if err != nil || len(r.Redact) != 2 || len(r.RefuseTools) != 2 || r.Redact[1] != "api_keys" {
		t.Errorf("%+v, %v", r, err)
	}
}

// Each decision other than allow is an event on the current span, naming
// the policy, what it acted on and why.
func TestPolicyDecisionsAreSpanEvents(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(context.Background(), "turn")
	g := guard(t, llm.PolicyRules{RefuseTools: []string{"rm"}}, &policyLog{})
	_ = g.Tool(ctx, &llm.ToolCall{Name: "rm"})
	_ = g.Tool(ctx, &llm.ToolCall{Name: "ls"})
	span.End()
	spans := exp.GetSpans()
	if len(spans) != 1 || len(spans[0].Events) != 1 {
		t.Fatalf("spans %+v", spans)
	}
	ev := spans[0].Events[0]
	attrs := map[string]any{}
	for _, kv := range ev.Attributes {
		attrs[string(kv.Key)] = kv.Value.AsInterface()
	}
	if ev.Name != "agentmesh.policy" || attrs["agentmesh.policy.name"] != "refuse-tools" || attrs["agentmesh.policy.action"] != "refuse" ||
		attrs["agentmesh.policy.tool"] != "rm" || attrs["agentmesh.policy.target"] != "tool" || !strings.Contains(attrs["agentmesh.policy.reason"].(string), "rm may not be called") {
		t.Errorf("event %s %v", ev.Name, attrs)
	}
}

// The decisions under a span are counted in its attributes, summed over
// the checks made under it: three tool calls and a model call (whose
// prompt and answer are each checked by the one redact policy).
func TestPolicyDecisionsAreCountedOnTheSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	srv := llmtest.New(t, llmtest.Answer("mail ann@example.com"))
	c, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	g := guard(t, llm.PolicyRules{RefuseTools: []string{"rm"}, ApproveTools: []string{"mail"}, Redact: []string{"emails"}}, &policyLog{})
	ctx, span := tp.Tracer("test").Start(context.Background(), "turn")
	_ = g.Tool(ctx, &llm.ToolCall{Name: "rm"})                        // refused
	_ = g.Tool(ctx, &llm.ToolCall{Name: "mail"})                      // allowed, held
	_ = g.Tool(ctx, &llm.ToolCall{Name: "ls", Arguments: `"a@b.io"`}) // allowed, allowed, redacted
	if _, _, err := g.Model(c).Chat(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	} // request: 3 allowed; answer: 2 allowed, redacted
	span.End()
	var turn *tracetest.SpanStub
	for i, s := range exp.GetSpans() {
		if s.Name == "turn" {
			turn = &exp.GetSpans()[i]
		}
	}
	if turn == nil {
		t.Fatalf("no span turn in %+v", exp.GetSpans())
	}
	attrs := map[string]any{}
	for _, kv := range turn.Attributes {
		attrs[string(kv.Key)] = kv.Value.AsInterface()
	}
	for k, want := range map[string]int64{"agentmesh.policy.allowed": 8, "agentmesh.policy.refused": 1, "agentmesh.policy.redacted": 2,
		"agentmesh.policy.approvals": 1, "agentmesh.policy.rewritten": 0} {
		if attrs[k] != want {
			t.Errorf("%s = %v, want %d (attributes %v)", k, attrs[k], want, attrs)
		}
	}
}

// A secret a pattern of your own matches across a space, split between
// two pieces of a stream, is redacted in the stream as in the answer: the
// guard holds back enough text (PolicyFuncs.Hold, set by the redact rules
// for such a pattern) to see the match whole.
func TestPolicyRedactsAcrossPiecesAndSpaces(t *testing.T) {
	g := guard(t, llm.PolicyRules{Redact: []string{`ACME [0-9]{3} [0-9]{3}`, "emails"}}, &policyLog{})
	pieces := []string{"Your order ACME ", "123 4", "56 ships to ann", "@example.com\u00a0today, ", "in ACME 999 000."}
	var streamed []string
	resp, _, err := g.Model(pieceModel{pieces}).Stream(context.Background(), llm.Request{}, func(d llm.Delta) { streamed = append(streamed, d.Text) })
	if err != nil {
		t.Fatal(err)
	}
	want := "Your order [redacted text] ships to [redacted email]\u00a0today, in [redacted text]."
	if got := strings.Join(streamed, ""); got != want || resp.Message.Content != want {
		t.Fatalf("streamed %q, answer %q; want %q", got, resp.Message.Content, want)
	}
	for _, s := range streamed {
		if !utf8.ValidString(s) {
			t.Errorf("piece %q is not valid UTF-8 (a space of two bytes was cut)", s)
		}
	}
	if len(streamed) < 2 {
		t.Errorf("the text came in %d pieces; it must still stream", len(streamed))
	}
}
