package prompt

import (
	"context"

	"github.com/agentmesh/agentmesh/agents"
	"github.com/agentmesh/agentmesh/llm"
)

// streamer is a model that streams its answer (an *llm.Client does).
type streamer interface {
	Stream(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Response, llm.Usage, error)
}

// chat is one call of the model. A model that streams sends the text of
// its answer, as it writes it, as the task's text (agents.ReportText:
// mesh.delta.<id>), and a progress event "writing" when the first piece
// comes; the answer returned is the same.
func (a *Agent) chat(ctx context.Context, model ToolModel, req llm.Request) (llm.Response, llm.Usage, error) {
	s, ok := model.(streamer)
	if !ok {
		return model.Chat(ctx, req)
	}
	writing := false
	return s.Stream(ctx, req, func(d llm.Delta) {
		if d.Text == "" {
			return
		}
		if !writing {
			writing = true
			agents.ReportProgress(ctx, "writing", 0)
		}
		agents.ReportText(ctx, d.Text)
	})
}
