package llm

import (
	"context"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmesh/agentmesh/telemetry"
)

// genAISystem is gen_ai.system, the attribute the GenAI conventions named
// the provider by before gen_ai.provider.name; both are set, as backends
// read one or the other.
const genAISystem = attribute.Key("gen_ai.system")

// startSpan starts the span of one model call (GenAI semantic
// conventions: span name "{operation} {model}", kind client).
func (c *Client) startSpan(ctx context.Context, model string, streamed bool) (context.Context, trace.Span) {
	provider := semconv.GenAIProviderNameOpenAI
	switch c.prov.name() {
	case ProviderAnthropic:
		provider = semconv.GenAIProviderNameAnthropic
	case ProviderGemini:
		provider = semconv.GenAIProviderNameGCPGemini
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat, genAISystem.String(c.prov.name()), provider,
		semconv.GenAIRequestModel(model), attribute.Bool("agentmesh.llm.streamed", streamed),
	}
	if u, err := url.Parse(c.cfg.BaseURL); err == nil && u.Hostname() != "" {
		attrs = append(attrs, semconv.ServerAddress(u.Hostname()))
	}
	return telemetry.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// endSpan records the call's outcome and usage on its span and ends it.
func (c *Client) endSpan(span trace.Span, resp Response, usage Usage, err error) {
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIUsageInputTokens(usage.Tokens.Prompt), semconv.GenAIUsageOutputTokens(usage.Tokens.Completion),
			telemetry.AttrCost.Float64(usage.Cost), attribute.Int("agentmesh.llm.attempts", usage.Attempts))
		if resp.Model != "" {
			span.SetAttributes(semconv.GenAIResponseModel(resp.Model))
		}
		if resp.ID != "" {
			span.SetAttributes(semconv.GenAIResponseID(resp.ID))
		}
		if resp.FinishReason != "" {
			span.SetAttributes(semconv.GenAIResponseFinishReasons(resp.FinishReason))
		}
	}
	telemetry.End(span, err)
}
