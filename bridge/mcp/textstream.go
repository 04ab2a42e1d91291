package mcp

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/client"
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
// the returned stop is called.
func (s *Server) forwardTaskText(ctx context.Context, p *progress, taskID string) (stop func()) {
	stopFollow, err := client.FollowDeltas(s.nc, s.cfg.names, taskID, func(d schemas.ChatDelta) { p.sendText(ctx, d.Text) })
	if err != nil {
		s.cfg.log.Warn("following task text", "task", taskID, "err", err)
		return func() {}
	}
	return stopFollow
}
