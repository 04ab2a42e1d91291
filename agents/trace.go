package agents

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// startTask starts the span of one delivery, "task AGENT", a child of the
// task event's traceparent (the step or tool call that dispatched it). It
// begins when the task was published (the event's time), with a child
// "queue wait" up to the delivery's receipt, so the span shows the task's
// time in the queue and in the agent. The context also carries the task's
// ids for the log lines about it.
func (r *Runtime) startTask(d *delivery) {
	ev := d.event
	ctx := telemetry.WithTraceParent(context.Background(), ev.Ext(bus.ExtTraceParent))
	start, queued := d.start, time.Duration(0)
	if !ev.Time.IsZero() && ev.Time.Before(d.start) {
		start, queued = ev.Time, d.start.Sub(ev.Time)
	}
	ctx, span := telemetry.Start(ctx, "task "+r.contract.Name, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(start))
	if span.IsRecording() {
		span.SetAttributes(telemetry.AttrAgent.String(r.contract.Name), telemetry.AttrTaskID.String(ev.ID),
			telemetry.AttrDelivery.Int(d.attempt), attribute.String("agentmesh.instance", r.cfg.instanceID),
			attribute.Int64("agentmesh.queue_wait_ms", queued.Milliseconds()),
			semconv.MessagingSystemKey.String("nats"), semconv.MessagingOperationTypeProcess,
			semconv.MessagingDestinationName(d.raw.Subject), semconv.MessagingMessageID(ev.ID))
		for k, key := range map[string]attribute.Key{bus.ExtRunID: telemetry.AttrRunID, bus.ExtStepID: telemetry.AttrStepID,
			bus.ExtConversationID: telemetry.AttrConversation} {
			if v := ev.Ext(k); v != "" {
				span.SetAttributes(key.String(v))
			}
		}
		if queued > 0 {
			_, q := telemetry.Start(ctx, "queue wait", trace.WithTimestamp(start))
			q.End(trace.WithTimestamp(d.start))
		}
	}
	d.ctx = telemetry.WithLogAttrs(ctx, "task", ev.ID, "run", ev.Ext(bus.ExtRunID), "step", ev.Ext(bus.ExtStepID),
		"conversation", ev.Ext(bus.ExtConversationID))
	d.span = span
}

// endTask records how the delivery ended and ends its span.
func endTask(d *delivery, f schemas.TaskFinished) {
	if d.span == nil {
		return
	}
	var err error
	if f.Outcome != schemas.OutcomeCompleted && f.Outcome != schemas.OutcomeDuplicate && f.Error != "" {
		err = taskError(f.Error)
		d.span.SetAttributes(telemetry.AttrCode.String(f.Code))
	}
	d.span.SetAttributes(telemetry.AttrOutcome.String(f.Outcome))
	telemetry.End(d.span, err)
}

// taskError is a task's failure as its TaskFinished tells it.
type taskError string

func (e taskError) Error() string { return string(e) }
