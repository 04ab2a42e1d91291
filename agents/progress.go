package agents

import (
	"context"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// taskScope is what ReportProgress needs to know about the running task.
type taskScope struct {
	rt     *Runtime
	taskID string
	events string // mesh.events.<conversation|run|task>.task
	ext    map[string]string
	delta  *textStream // ReportText's pieces
}

type scopeKey struct{}

func withScope(ctx context.Context, s *taskScope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// ReportProgress publishes an io.agentmesh.task.progress event for the task
// whose Execute received ctx, on mesh.events.<id>.task where id is the task's
// conversation id, else its run id, else the task id. percent is 0 to 100
// (0 when unknown). Outside Execute it does nothing. Progress is best
// effort: a publish error is logged, not returned.
func ReportProgress(ctx context.Context, message string, percent float64) {
	s, ok := ctx.Value(scopeKey{}).(*taskScope)
	if !ok || s == nil {
		return
	}
	ev, err := bus.NewEvent(bus.TypeTaskProgress, s.rt.source, schemas.TaskProgress{
		TaskID: s.taskID, Agent: s.rt.contract.Name, Message: message, Percent: percent,
	})
	if err != nil {
		return
	}
	ev.DataContentType = bus.ContentTypeJSON
	for k, v := range s.ext {
		ev.SetExt(k, v)
	}
	ev.SetExt(bus.ExtTaskID, s.taskID)
	msg, err := bus.Encode(s.events, ev)
	if err != nil {
		s.rt.log.WarnContext(ctx, "progress event", "err", err)
		return
	}
	if err := s.rt.nc.PublishMsg(msg); err != nil {
		s.rt.log.WarnContext(ctx, "publishing progress", "err", err)
	}
}
