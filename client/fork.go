package client

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// SubmitFork asks for run runID (the event id when empty) forked from run
// req.From at step req.At (see schemas.ForkRequest) with an
// io.agentmesh.pipeline.fork.requested event on names.PipelineSubmit(),
// as SubmitPipeline submits a pipeline, and returns the new run's id. The
// orchestrator answers on the new run's events: its steps, or a failed
// io.agentmesh.pipeline.completed saying why it refused the fork.
func SubmitFork(ctx context.Context, js jetstream.JetStream, names bus.Names, req schemas.ForkRequest, runID, source string) (_ string, err error) {
	if err := req.Validate(); err != nil {
		return "", err
	}
	ctx, span := telemetry.Start(ctx, "pipeline fork", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("agentmesh.fork.from", req.From), attribute.String("agentmesh.fork.at", req.At)))
	defer func() { telemetry.End(span, err) }()
	if source == "" {
		source = "agentmesh/client"
	}
	ev, err := bus.NewEvent(bus.TypeForkRequested, source, req)
	if err != nil {
		return "", err
	}
	return submit(ctx, js, names, ev, runID, span)
}
