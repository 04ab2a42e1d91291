package orchestrator

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// schedulesConsumer is the replicas' shared durable on MESH_SCHEDULES,
// filtered on the ticks (mesh.scheduled.*), or nil on a mesh provisioned
// without the stream (it has no schedules).
func (o *Orchestrator) schedulesConsumer(ctx context.Context) (jetstream.Consumer, error) {
	if _, err := o.js.Stream(ctx, o.names.SchedulesStream()); errors.Is(err, jetstream.ErrStreamNotFound) {
		o.log.Warn("no schedules stream: schedules do not run (provision the mesh with this version)", "stream", o.names.SchedulesStream())
		return nil, nil
	}
	return o.consumer(ctx, o.names.SchedulesStream(), jetstream.ConsumerConfig{
		Durable: DurableName, FilterSubject: o.names.ScheduleTicks(), AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: o.cfg.ackWait, MaxDeliver: o.cfg.maxDeliver, MaxAckPending: o.cfg.maxPending,
		Description: "orchestrator replicas: the ticks of pipeline schedules",
	})
}

// handleTick starts the run of one tick of a schedule: the submission the
// server copied from mesh.schedule.<name> to mesh.scheduled.<name> when
// the schedule fired. The run id is bus.ScheduledRunID of the tick's
// stream sequence and time, so a tick delivered again (a replica stopped
// before acknowledging it) names the same run, which starts once. A
// scheduled run has no owner. It ends as a submission does: started,
// refused with its failed pipeline.completed, or retried and finally
// answered and dead-lettered.
func (o *Orchestrator) handleTick(ctx context.Context, m jetstream.Msg) {
	name := o.names.ScheduleOfTick(m.Subject())
	md, err := m.Metadata()
	if err == nil && name == "" {
		err = fmt.Errorf("subject %s names no schedule", m.Subject())
	}
	if err != nil {
		o.settleRefusal(m, fmt.Errorf("%w: schedule tick: %w", bus.ErrNoReplySubject, err))
		return
	}
	runID := bus.ScheduledRunID(name, md.Timestamp, md.Sequence.Stream)
	ev, err := bus.DecodeJS(m)
	if err == nil && ev.Type != bus.TypePipelineSubmitted {
		err = fmt.Errorf("unexpected event type %q; a schedule holds a %s", ev.Type, bus.TypePipelineSubmitted)
	}
	ev.ID = runID
	ev.SetExt(bus.ExtRunID, runID)
	ev.SetExt(bus.ExtTraceParent, "") // the schedule's, from when it was added: each run has its own trace
	ctx = bus.WithRequester(ctx, "")
	if err != nil {
		o.settleRefusal(m, o.rejectRequest(ctx, o.names.PipelineSubmit(), ev, schemas.CodeMalformedEvent, fmt.Errorf("schedule %q: %w", name, err)))
		return
	}
	stop := keepAlive(m, o.cfg.ackWait/3)
	o.admit <- struct{}{}
	err = o.pipelines.Submit(ctx, ev)
	<-o.admit
	stop()
	if errors.Is(err, bus.ErrNoReplySubject) {
		o.settleRefusal(m, err)
		return
	}
	if err != nil {
		o.log.WarnContext(ctx, "scheduled run", "schedule", name, "run", runID, "err", err)
		o.retryRequest(ctx, m, ev, err)
		return
	}
	o.log.InfoContext(ctx, "scheduled run started", "schedule", name, "run", runID)
	_ = m.Ack()
}
