package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// rewind starts conversation conv as r's conversation was before its turn
// r.Turn (state.RewindConversation), for a request asking so
// (ChatRequest.Rewind): the turn that follows is conv's next, and the
// model reads only the turns copied. Only the client that started r's
// conversation (or a plain-subject sender) may rewind it. A rewind that
// cannot be (no such conversation or turn, conv taken) is an error with
// a code its sender is told; other errors are the store's (try again).
func (c *Chat) rewind(ctx context.Context, conv string, r schemas.ChatRewind) error {
	raw, _, err := c.store.ChatRecord(ctx, r.ConversationID)
	if err != nil {
		return err
	}
	if requester := bus.Requester(ctx); requester != "" {
		var rec chatRecord
		if raw != nil {
			if err := json.Unmarshal(raw, &rec); err != nil {
				return fmt.Errorf("%w: the chat of conversation %q does not decode: %w", state.ErrCorrupt, r.ConversationID, err)
			}
		}
		if requester != rec.Owner {
			return schemas.WithCode(schemas.CodeForbidden, fmt.Errorf("%w: conversation %s was not started by client %s: only the client that started a conversation (or admin) may rewind it",
				ErrNotOwner, r.ConversationID, requester))
		}
	}
	_, err = c.store.RewindConversation(ctx, r.ConversationID, conv, r.Turn)
	switch {
	case errors.Is(err, state.ErrNotFound):
		return schemas.WithCode(schemas.CodeNotFound, fmt.Errorf("rewind: no conversation %q to rewind: %w", r.ConversationID, err))
	case errors.Is(err, state.ErrBadRewind), errors.Is(err, state.ErrExists):
		return schemas.WithCode(schemas.CodeInvalidRequest, fmt.Errorf("rewind: %w", err))
	}
	return err
}
