package agents

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/schemas"
)

// textStream is where a task's ReportText pieces go: mesh.delta.<id> of the
// task's conversation, else run, else task (mesh.delta.<id>.<owner> for a
// task with an owner extension), on core NATS.
type textStream struct {
	subject string
	mu      sync.Mutex
	d       schemas.ChatDelta
}

// deltaOf is the text stream of the task ev.
func (r *Runtime) deltaOf(ev bus.Event) *textStream {
	d := schemas.ChatDelta{TaskID: ev.ID, Agent: r.contract.Name, RunID: ev.Ext(bus.ExtRunID)}
	id := ev.ID
	if conv := ev.Ext(bus.ExtConversationID); conv != "" && bus.ValidateToken(bus.ExtConversationID, conv) == nil {
		d.ConversationID, id = conv, conv
	} else if d.RunID != "" && bus.ValidateToken(bus.ExtRunID, d.RunID) == nil {
		id = d.RunID
	}
	return &textStream{subject: r.cfg.names.ForClient(ev.Ext(bus.ExtOwner)).Deltas(id), d: d}
}

// ReportText sends a piece of the text the task whose Execute received ctx
// is writing, such as its model's answer as the model writes it: a
// schemas.ChatDelta naming the task and agent on mesh.delta.<id> (id as
// ReportProgress picks it), on core NATS, at most once and never stored.
// Readers follow it with meshcore.FollowDeltas; the task's result is whole
// whatever was lost. Outside Execute, or for an empty piece, it does
// nothing. It is safe to call from several goroutines; pieces are numbered
// in the order of the calls.
func ReportText(ctx context.Context, piece string) {
	s, ok := ctx.Value(scopeKey{}).(*taskScope)
	if !ok || s == nil || s.delta == nil || piece == "" {
		return
	}
	ts := s.delta
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.d.Seq++
	ts.d.Text = piece
	b, err := json.Marshal(ts.d)
	if err != nil {
		return
	}
	_ = s.rt.nc.Publish(ts.subject, b) // at most once: a failed publish is a lost piece
}
