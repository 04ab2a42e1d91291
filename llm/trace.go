package llm

import (
	"context"
	"net/url"

	openai "github.com/sashabaranov/go-openai"
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
func (c *Client) startSpan(ctx context.Context, model string) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat, genAISystem.String("openai"), semconv.GenAIProviderNameOpenAI,
		semconv.GenAIRequestModel(model),
	}
	if u, err := url.Parse(c.cfg.BaseURL); err == nil && u.Hostname() != "" {
		attrs = append(attrs, semconv.ServerAddress(u.Hostname()))
	}
	return telemetry.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// endSpan records the call's outcome and usage on its span and ends it.
func (c *Client) endSpan(span trace.Span, resp openai.ChatCompletionResponse, usage Usage, err error) {
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIUsageInputTokens(usage.Tokens.Prompt), semconv.GenAIUsageOutputTokens(usage.Tokens.Completion),
			telemetry.AttrCost.Float64(usage.Cost), attribute.Int("agentmesh.llm.attempts", usage.Attempts))
		if resp.Model != "" {
			span.SetAttributes(semconv.GenAIResponseModel(resp.Model))
		}
		if resp.ID != "" {
			span.SetAttributes(semconv.GenAIResponseID(resp.ID))
		}
		if len(resp.Choices) > 0 && resp.Choices[0].FinishReason != "" {
			span.SetAttributes(semconv.GenAIResponseFinishReasons(string(resp.Choices[0].FinishReason)))
		}
	}
	telemetry.End(span, err)
}
