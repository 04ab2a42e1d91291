package chat

import (
	"encoding/json"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
)

// deltas returns the callback that sends the text of the turn's next model
// call, as the model writes it, on the conversation's delta subject
// (mesh.delta.<conv>, mesh.delta.<conv>.<owner> when a client owns it; core
// NATS: at most once, never stored; a lost piece costs a reader only
// that piece, the answer comes whole in chat.responded). Tool-call
// arguments are not sent: the progress events say which agent is called.
func (c *Chat) deltas(s *session) func(llm.Delta) {
	nc := c.js.Conn()
	subject := c.names.ForClient(s.rec.Owner).Deltas(s.conv)
	d := schemas.ChatDelta{ConversationID: s.conv, Turn: s.turn.Number, Step: s.turn.Steps + 1}
	return func(piece llm.Delta) {
		if piece.Text == "" || nc == nil {
			return
		}
		d.Seq++
		d.Text = piece.Text
		b, err := json.Marshal(d)
		if err != nil {
			return
		}
		_ = nc.Publish(subject, b) // at most once: a failed publish is a lost piece
	}
}
