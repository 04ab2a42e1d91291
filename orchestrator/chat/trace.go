package chat

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// startTurn starts the span of the turn asked for by ev (a consumer span,
// child of the request's traceparent) and puts the turn's ids on ctx for
// the log lines.
func startTurn(ctx context.Context, ev bus.Event, conv string) (context.Context, trace.Span) {
	ctx = telemetry.WithTraceParent(ctx, ev.Ext(bus.ExtTraceParent))
	ctx, span := telemetry.Start(ctx, "chat turn", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(telemetry.AttrConversation.String(conv), semconv.GenAIConversationID(conv),
			attribute.String("agentmesh.request.id", ev.ID)))
	return ctx, span
}

// endTurn records how the turn ended and ends its span.
func endTurn(span trace.Span, resp schemas.ChatResponse, err error) {
	if span.IsRecording() {
		span.SetAttributes(telemetry.AttrStatus.String(resp.State), attribute.Int("agentmesh.chat.steps", resp.Steps),
			semconv.GenAIUsageInputTokens(resp.Tokens.Prompt), semconv.GenAIUsageOutputTokens(resp.Tokens.Completion),
			telemetry.AttrCost.Float64(resp.Cost))
		if err == nil && resp.State == schemas.ChatFailed {
			err = errors.New(resp.Error)
			span.SetAttributes(telemetry.AttrCode.String(resp.Code))
		}
	}
	telemetry.End(span, err)
}

// callTool runs one agent call as a span "execute_tool AGENT" (GenAI
// semantic conventions); the task it dispatches carries the span as its
// traceparent, so the agent's span is its child.
func (c *Chat) callTool(ctx context.Context, s *session, taskID string, call llm.ToolCall) (string, schemas.ToolCallRecord) {
	agent := call.Name
	ctx, span := telemetry.Start(ctx, "execute_tool "+agent, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(agent),
			semconv.GenAIToolCallID(call.ID), semconv.GenAIToolType("function"), telemetry.AttrAgent.String(agent),
			telemetry.AttrTaskID.String(taskID)))
	obs, rec, ok := c.guardTool(ctx, s, taskID, &call)
	if ok && agent == RememberTool && c.remembers(s) {
		obs, rec = c.remember(ctx, s, taskID, call)
	} else if ok {
		obs, rec = c.callAgent(telemetry.WithLogAttrs(ctx, "task", taskID, "agent", agent), s, taskID, agent, call.Arguments)
	}
	var err error
	if rec.Error != "" {
		err = errors.New(rec.Error)
		span.SetAttributes(telemetry.AttrCode.String(rec.Code))
	}
	telemetry.End(span, err)
	return obs, rec
}
