package llm_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// Every provider's call is a client span "chat MODEL" with the GenAI
// conventions' provider name, tokens and finish reason, and whether it
// was streamed.
func TestCallSpanNamesTheProvider(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev); _ = tp.Shutdown(context.Background()) })

	reply := llmtest.Reply{Content: "ok", Usage: schemas.Tokens{Prompt: 11, Completion: 3}}
	for _, tc := range []struct {
		cfg      llm.Config
		provider string
	}{
		{llmtest.New(t, reply).Config(), "openai"},
		{llmtest.NewAnthropic(t, reply).Config(), "anthropic"},
		{llmtest.NewGemini(t, reply).Config(), "gcp.gemini"},
	} {
		exp.Reset()
		c, err := llm.New(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Stream(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, func(llm.Delta) {}); err != nil {
			t.Fatal(err)
		}
		var call *tracetest.SpanStub // the Anthropic SDK adds its own span per attempt under it
		for i, s := range exp.GetSpans() {
			if s.Name == "chat "+tc.cfg.Model {
				call = &exp.GetSpans()[i]
			}
		}
		if call == nil {
			t.Fatalf("%s: no span %q in %+v", tc.provider, "chat "+tc.cfg.Model, exp.GetSpans())
		}
		attrs := map[string]any{}
		for _, kv := range call.Attributes {
			attrs[string(kv.Key)] = kv.Value.AsInterface()
		}
		for k, want := range map[string]any{"gen_ai.provider.name": tc.provider, "gen_ai.usage.input_tokens": int64(11),
			"gen_ai.usage.output_tokens": int64(3), "agentmesh.llm.streamed": true} {
			if attrs[k] != want {
				t.Errorf("%s: %s = %v, want %v", tc.provider, k, attrs[k], want)
			}
		}
		if attrs["gen_ai.response.finish_reasons"] == nil {
			t.Errorf("%s: no finish reason on the span: %v", tc.provider, attrs)
		}
	}
}
