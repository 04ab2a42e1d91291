package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/telemetry"
)

// SubmitPipeline publishes spec as an io.agentmesh.pipeline.submitted event
// on names.PipelineSubmit() (mesh.pipeline.submit, or the client's own
// subject, which makes it the run's owner) with a JetStream publish (the
// ack says the request was accepted) and returns the run id: runID, or the
// event id when runID is empty. A runID that another submission named
// first, within the requests stream's duplicate window, fails with
// ErrRunExists: the stream decides, so of two submissions of one run id at
// once, from any clients or gateways, exactly one is accepted. (A run id
// used longer ago is refused by the orchestrator, on the submission's
// event id.) It records a producer span "pipeline submit" whose context
// the submission carries as its traceparent: the run's spans join its
// trace.
func SubmitPipeline(ctx context.Context, js jetstream.JetStream, names bus.Names, spec pipelinespec.PipelineSpec, runID, source string) (_ string, err error) {
	ctx, span := telemetry.Start(ctx, "pipeline submit", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("agentmesh.pipeline.name", spec.Name)))
	defer func() { telemetry.End(span, err) }()
	if source == "" {
		source = "agentmesh/client"
	}
	ev, err := bus.NewEvent(bus.TypePipelineSubmitted, source, spec)
	if err != nil {
		return "", err
	}
	return submit(ctx, js, names, ev, runID, span)
}

// submit publishes ev, a submission of run runID (the event id when
// empty), as SubmitPipeline says.
func submit(ctx context.Context, js jetstream.JetStream, names bus.Names, ev bus.Event, runID string, span trace.Span) (string, error) {
	if runID == "" {
		runID = ev.ID
	} else if err := bus.ValidateToken("run id", runID); err != nil {
		return "", err
	}
	ev.SetExt(bus.ExtRunID, runID)
	span.SetAttributes(telemetry.AttrRunID.String(runID))
	SetTraceParent(ctx, &ev)
	msg, err := bus.Encode(names.PipelineSubmit(), ev)
	if err != nil {
		return "", err
	}
	msg.Header.Set(jetstream.MsgIDHeader, "submit-"+runID)
	if _, err := bus.PublishNew(ctx, js, msg); err != nil {
		if errors.Is(err, bus.ErrDuplicate) {
			return "", fmt.Errorf("%w: run id %q was submitted by another request first, and this submission was dropped (%w); submit with another run id, or none to have one made", ErrRunExists, runID, err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("submitting pipeline: no JetStream ack (is the mesh provisioned?): %w", err)
		}
		return "", fmt.Errorf("submitting pipeline: %w", err)
	}
	return runID, nil
}
