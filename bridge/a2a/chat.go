package a2a

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// chatRunner starts chat turns: the A2A context id is the conversation id,
// and each message is one turn.
type chatRunner struct{ h *Handler }

// start sends msg's text as a chat turn and returns once the mesh has
// stored the request. A message naming a task waiting for input continues
// that task with a new turn of its conversation.
func (r chatRunner) start(ctx context.Context, msg *Message) (*taskEntry, error) {
	h := r.h
	text, err := chatText(msg)
	if err != nil {
		return nil, err
	}
	conv := msg.ContextID
	var cont *taskEntry
	if msg.TaskID != "" {
		e, ok := h.tasks.get(msg.TaskID)
		if !ok || e.kind != kindChat {
			return nil, fmt.Errorf("%w: message.taskId %q names no chat task here", ErrTaskNotFound, msg.TaskID)
		}
		if s := e.state(); !s.Interrupted() {
			return nil, fmt.Errorf("%w: task %q is %s, not waiting for input: send a new message without taskId (same contextId to stay in the conversation)", ErrUnsupported, msg.TaskID, s)
		}
		t := e.snapshot(nil)
		if conv != "" && conv != t.ContextID {
			return nil, fmt.Errorf("%w: message.contextId %q is not task %q's context %q", ErrInvalidParams, conv, t.ContextID, msg.TaskID)
		}
		conv, cont = t.ContextID, e
	}
	if conv != "" {
		if err := bus.ValidateToken("contextId", conv); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidParams, err)
		}
	}
	accepted := make(chan string, 1)
	failed := make(chan error, 1)
	var e *taskEntry
	ready := make(chan struct{})
	answer := &answerStream{id: "answer-" + uuid.NewString()[:8]}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		stored := false // set by the accepted callback, on this goroutine
		resp, _, err := client.Turn(h.ctx, h.js, h.names, conv, text, "agentmesh/a2a", func(p schemas.TaskProgress) {
			<-ready
			e.setStatus(StateWorking, agentMessage(e.task.ID, e.task.ContextID, p.Message))
		}, func(c string) { stored = true; accepted <- c }, client.WithDeltas(func(d schemas.ChatDelta) {
			<-ready
			answer.add(d)
		}))
		if !stored {
			failed <- err // refused before it was stored
			return
		}
		<-ready
		finishTurn(e, answer.id, resp, err)
	}()
	var c string
	select {
	case c = <-accepted:
	case err := <-failed:
		if err == nil {
			err = fmt.Errorf("chat: the turn ended before its request was stored")
		}
		return nil, err
	}
	if cont != nil {
		e = cont
		e.addUserMessage(userMessage(msg, e.task.ID))
		e.setStatus(StateWorking, nil)
	} else {
		id := uuid.NewString()
		um := userMessage(msg, id)
		um.ContextID = c
		e = newEntry(kindChat, "", Task{ID: id, ContextID: c, Status: TaskStatus{State: StateSubmitted, Timestamp: now()},
			History: []Message{um}, Metadata: map[string]any{"conversation_id": c}})
		h.tasks.add(e)
	}
	e.markBegun()
	answer.e = e
	close(ready)
	return e, nil
}

// finishTurn settles a chat task from the turn's answer: completed, input
// required when the turn stopped at its step limit (the conversation goes
// on with the next message), failed otherwise.
// The answer is the artifact answerID, which its streamed chunks may have
// started.
func finishTurn(e *taskEntry, answerID string, resp schemas.ChatResponse, err error) {
	id, conv := e.task.ID, e.task.ContextID
	if err != nil {
		e.setStatus(StateFailed, agentMessage(id, conv, err.Error()))
		return
	}
	switch resp.State {
	case schemas.ChatCompleted:
		e.addArtifact(Artifact{ArtifactID: answerID, Name: "answer", Parts: []Part{TextPart(resp.Output)}})
		e.setStatus(StateCompleted, agentMessage(id, conv, resp.Output))
	case schemas.ChatStepLimitReached:
		e.setStatus(StateInputRequired, agentMessage(id, conv, resp.Output+"\n\n(The turn reached its step limit: reply to go on.)"))
	default:
		text := resp.Error
		if text == "" {
			text = "the turn failed"
		}
		m := agentMessage(id, conv, text)
		if resp.Code != "" {
			m.Metadata = map[string]any{"code": resp.Code}
		}
		e.setStatus(StateFailed, m)
	}
}

// chatText is the text of msg's text parts; the chat takes nothing else.
func chatText(msg *Message) (string, error) {
	var texts []string
	for i, p := range msg.Parts {
		kind, err := p.kind()
		if err != nil {
			return "", fmt.Errorf("%w: parts[%d]: %v", ErrInvalidParams, i, err)
		}
		if kind != "text" {
			return "", fmt.Errorf("%w: parts[%d] is a %s part: the chat takes text parts; send data and files to an agent's endpoint (%s/<agent>)", ErrContentType, i, kind, PathAgents)
		}
		texts = append(texts, *p.Text)
	}
	text := strings.TrimSpace(strings.Join(texts, "\n"))
	if text == "" {
		return "", fmt.Errorf("%w: the message's text is empty: say what the mesh should do", ErrInvalidParams)
	}
	return text, nil
}
