package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// Orphaned tasks. A task published to mesh.task.<agent> for an agent that
// is not registered and has never consumed tasks on this mesh (no durable
// consumer named after it) would wait in the work queue for nobody. The
// janitor answers each such task, once it is older than the grace, with a
// failed result (code unknown_agent) on its replyto when that is one of the
// agent's result subjects (else mesh.result.<agent>.<task>)
// and removes it from MESH_TASKS. An agent that has run before keeps its
// consumer, so its tasks wait for it to come back (bounded by the stream's
// max age). Every replica runs the janitor; the one whose delete of the
// task succeeds answers it.

// DefaultOrphanGrace is how long a task for an unknown agent waits for the
// agent to start before it is answered unknown_agent.
const DefaultOrphanGrace = 5 * time.Second

// runOrphans looks for orphaned tasks every interval until ctx ends.
func (o *Orchestrator) runOrphans(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if o.cfg.orphanGrace < 0 {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		every := max(o.cfg.orphanGrace/2, 100*time.Millisecond)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := o.sweepOrphans(ctx); err != nil && ctx.Err() == nil {
					o.log.Debug("orphaned tasks", "err", err)
				}
			}
		}
	}()
	return done
}

// sweepOrphans answers the tasks of unknown agents older than the grace.
func (o *Orchestrator) sweepOrphans(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := o.js.Stream(ctx, o.names.TasksStream())
	if err != nil {
		return err
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(o.names.Tasks()))
	if err != nil {
		return err
	}
	prefix := strings.TrimSuffix(o.names.Tasks(), ">")
	for subject := range info.State.Subjects {
		agent := strings.TrimPrefix(subject, prefix)
		if info, ok := o.registry.Lookup(agent); ok && len(info.Instances) > 0 {
			continue
		}
		if bus.ValidateAgentName(agent) == nil {
			if _, err := stream.Consumer(ctx, agent); !errors.Is(err, jetstream.ErrConsumerNotFound) {
				continue // it has run here (or the lookup failed): its tasks wait
			}
		}
		if err := o.answerOrphans(ctx, stream, subject, agent); err != nil {
			return err
		}
	}
	return nil
}

// answerOrphans answers the tasks on subject older than the grace.
func (o *Orchestrator) answerOrphans(ctx context.Context, stream jetstream.Stream, subject, agent string) error {
	for seq := uint64(1); ; seq++ {
		m, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if time.Since(m.Time) < o.cfg.orphanGrace {
			return nil // this one and the later ones still wait
		}
		seq = m.Sequence
		if err := stream.DeleteMsg(ctx, seq); err != nil {
			continue // another replica took it
		}
		if err := o.answerOrphan(ctx, m, agent); err != nil {
			o.log.Warn("answering a task for an unknown agent", "subject", subject, "err", err)
		}
	}
}

// answerOrphan publishes the failed result of one orphaned task, or
// dead-letters a task that cannot be read.
func (o *Orchestrator) answerOrphan(ctx context.Context, m *jetstream.RawStreamMsg, agent string) error {
	raw := &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}
	task, err := bus.Decode(raw)
	if err == nil {
		err = bus.ValidateToken("task id", task.ID)
	}
	if err != nil {
		subject, derr := o.names.Dead(agent)
		if derr != nil {
			subject, _ = o.names.Dead(DurableName)
		}
		dl := bus.DeadLetter(subject, raw, DurableName, fmt.Sprintf("a task for the unknown agent %q that cannot be read: %v", agent, err))
		dl.Header.Set(bus.HeaderDeadCode, schemas.CodeUnknownAgent)
		dl.Header.Set(bus.HeaderDeadStream, o.names.TasksStream())
		dl.Header.Set(bus.HeaderDeadSequence, strconv.FormatUint(m.Sequence, 10))
		_, err := o.js.PublishMsg(ctx, dl)
		return err
	}
	res := schemas.Failure(agent, schemas.CodeUnknownAgent, fmt.Sprintf(
		"no agent %q is registered on this mesh, nor has one ever consumed tasks here; check the name with 'agentmesh agents', or start the agent and send the task again", agent), false)
	ev, err := bus.NewEvent(bus.TypeTaskFailed, o.cfg.source, res)
	if err != nil {
		return err
	}
	ev.SetExt(bus.ExtTaskID, task.ID)
	for _, k := range []string{bus.ExtConversationID, bus.ExtRunID, bus.ExtStepID, bus.ExtTraceParent} {
		ev.SetExt(k, task.Ext(k))
	}
	// Like an agent, the orchestrator answers only on the agent's result
	// subjects, never where a task's replyto points elsewhere (a KV key of
	// a conversation, say): it may write there, the sender may not.
	to := task.Ext(bus.ExtReplyTo)
	if !strings.HasPrefix(to, strings.TrimSuffix(o.names.AgentResults(agent), ">")) {
		to = o.names.Result(agent, task.ID)
	}
	msg, err := bus.Encode(to, ev)
	if err != nil {
		return err
	}
	msg.Header.Set(jetstream.MsgIDHeader, "result-"+task.ID)
	_, err = o.js.PublishMsg(ctx, msg)
	return err
}
