package client

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/pipelinespec"
)

// Approval adds a step of kind approval with no parents and makes it
// current: it waits up to timeout for a person to approve or reject (see
// ResolveStep); then def ("approve" or "reject") applies. Use After or
// ApprovalAfter to wire it.
func (b *PipelineBuilder) Approval(id, prompt string, timeout time.Duration, def string) *PipelineBuilder {
	b.spec.Steps = append(b.spec.Steps, pipelinespec.PipelineStep{ID: id, Kind: pipelinespec.StepKindApproval, TimeoutMS: timeout.Milliseconds(),
		Human: &pipelinespec.HumanStep{Prompt: prompt, Default: nonEmpty(def)}})
	b.cur = len(b.spec.Steps) - 1
	return b
}

// HumanInput adds a step of kind input with no parents and makes it
// current: it waits up to timeout for a person's value of dataType (TEXT
// when empty), which becomes its output "value"; then def applies (nil: the
// step fails with code timeout).
func (b *PipelineBuilder) HumanInput(id, prompt, dataType string, timeout time.Duration, def any) *PipelineBuilder {
	b.spec.Steps = append(b.spec.Steps, pipelinespec.PipelineStep{ID: id, Kind: pipelinespec.StepKindInput, TimeoutMS: timeout.Milliseconds(),
		Human: &pipelinespec.HumanStep{Prompt: prompt, Default: def, DataType: dataType}})
	b.cur = len(b.spec.Steps) - 1
	return b
}

func nonEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ResolveStep publishes a person's answer to an approval or input step
// (r) as io.agentmesh.pipeline.resolve.requested on names.PipelineResolve()
// (mesh.pipeline.resolve, or a client's own subject: a client may answer
// only the runs it submitted, docs/security.md)
// and returns the event's id. Any orchestrator replica applies it: the
// step's completed or failed event follows on mesh.events.<run>.pipeline,
// or an io.agentmesh.pipeline.resolve.refused naming this id says why
// nothing changed.
func ResolveStep(ctx context.Context, js jetstream.JetStream, names bus.Names, r pipelinespec.Resolution, source string) (string, error) {
	if err := bus.ValidateToken("run id", r.RunID); err != nil {
		return "", err
	}
	if source == "" {
		source = "agentmesh/client"
	}
	ev, err := bus.NewEvent(bus.TypeResolveRequested, source, r)
	if err != nil {
		return "", err
	}
	ev.SetExt(bus.ExtRunID, r.RunID)
	ev.SetExt(bus.ExtStepID, r.Step)
	SetTraceParent(ctx, &ev)
	msg, err := bus.Encode(names.PipelineResolve(), ev)
	if err != nil {
		return "", err
	}
	if _, err := bus.Publish(ctx, js, msg); err != nil {
		return "", fmt.Errorf("resolving step %q of run %s: %w", r.Step, r.RunID, err)
	}
	return ev.ID, nil
}
