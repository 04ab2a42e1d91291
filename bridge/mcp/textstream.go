package mcp

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/schemas"
)

// MetaText is the _meta key of a progress notification whose message is a
// piece of the text a model is writing (schemas.ChatDelta), not a progress
// message: a client that shows text as it is written appends the messages
// of the notifications that carry it, in order.
const MetaText = "agentmesh.dev/text"

// sendText sends a piece of a model's text as a progress notification
// marked with MetaText.
func (p *progress) sendText(ctx context.Context, text string) {
	if p == nil || text == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.n++
	_ = p.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.n, Message: text,
		Meta: mcp.Meta{MetaText: true}})
}

// close stops every later notification: none may follow the answer.
func (p *progress) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
}

// forwardTaskText sends the text the task's model writes
// (mesh.delta.<taskid>, as a PromptAgent streams it) as notifications until
// the returned stop is called. It is a channel subscription: the
// connection's reader puts each piece in the channel as it reads it, so
// the pieces sent before the task's result are in it when the result
// comes, and stop sends them before it returns.
func (s *Server) forwardTaskText(ctx context.Context, p *progress, taskID string) (stop func()) {
	ch := make(chan *nats.Msg, 256)
	sub, err := s.nc.ChanSubscribe(s.cfg.names.Deltas(taskID), ch)
	if err != nil {
		s.cfg.log.Warn("following task text", "task", taskID, "err", err)
		return func() {}
	}
	send := func(m *nats.Msg) {
		var d schemas.ChatDelta
		if json.Unmarshal(m.Data, &d) == nil {
			p.sendText(ctx, d.Text)
		}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case m := <-ch:
				send(m)
			case <-quit:
				for {
					select {
					case m := <-ch:
						send(m)
					default:
						return
					}
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		_ = sub.Unsubscribe()
	}
}
