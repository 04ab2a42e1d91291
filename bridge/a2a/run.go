package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// awaitSlack is how long past a task's deadline the bridge waits for its
// result before calling it failed.
const awaitSlack = 30 * time.Second

// agentRunner starts tasks of one mesh agent.
type agentRunner struct {
	h     *Handler
	agent string
}

// start dispatches msg as a task to the agent and follows it in the
// background. A message may not continue a task: a mesh task is one
// request and one result.
func (r agentRunner) start(ctx context.Context, msg *Message) (*taskEntry, error) {
	h := r.h
	if msg.TaskID != "" {
		if _, ok := h.tasks.get(msg.TaskID); !ok {
			return nil, fmt.Errorf("%w: message.taskId %q names no task here", ErrTaskNotFound, msg.TaskID)
		}
		return nil, fmt.Errorf("%w: task %q of %s takes no further messages (a mesh task is one request and one result): send a new message without taskId", ErrUnsupported, msg.TaskID, r.agent)
	}
	info, ok := h.registry.Lookup(r.agent)
	if !ok {
		return nil, fmt.Errorf("%w: agent %s left the mesh", ErrUnsupported, r.agent)
	}
	task, err := taskFromMessage(ctx, info.Contract, msg, h.files)
	if err != nil {
		return nil, err
	}
	id := uuid.NewString()
	e := newEntry(kindAgent, r.agent, Task{
		ID: id, ContextID: contextOf(msg), Status: TaskStatus{State: StateSubmitted, Timestamp: now()},
		History: []Message{userMessage(msg, id)}, Metadata: map[string]any{"agent": r.agent},
	})
	e.task.History[0].ContextID = e.task.ContextID
	// Follow the task's progress before dispatching it, so none is missed.
	progress, stopProgress, err := client.Follow(h.ctx, h.js, h.names, h.names.Events(id, "task"), true)
	if err != nil {
		return nil, fmt.Errorf("following task %s: %w", id, err)
	}
	text, stopText, err := followText(h, id)
	if err != nil {
		stopProgress()
		return nil, err
	}
	stop := func() { stopText(); stopProgress() }
	meta := client.DispatchMeta{TaskID: id, ReplyTo: h.names.Result(r.agent, id)}
	if h.client != "" {
		meta.ReplyTo = h.names.ClientResult(r.agent, h.client, id)
	}
	if _, err := h.disp.Dispatch(ctx, r.agent, task, meta); err != nil {
		stop()
		return nil, err
	}
	timeout := time.Duration(task.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = schemas.DefaultTaskTimeout
	}
	e.markBegun()
	h.tasks.add(e)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer stop()
		r.follow(e, info.Contract, meta.ReplyTo, progress, text, timeout+awaitSlack)
	}()
	return e, nil
}

// follow moves the task along as its progress events and result arrive.
func (r agentRunner) follow(e *taskEntry, c schemas.AgentContract, replyTo string, progress <-chan bus.Event, text <-chan *nats.Msg, limit time.Duration) {
	ctx, cancel := context.WithTimeout(r.h.ctx, limit)
	defer cancel()
	id, conv := e.task.ID, e.task.ContextID
	type outcome struct {
		res client.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := r.h.disp.Await(ctx, replyTo, id)
		done <- outcome{res, err}
	}()
	ts := taskText{e: e, artifact: textArtifact(c)}
	for {
		select {
		case m := <-text:
			ts.add(m)
		case ev := <-progress:
			var p schemas.TaskProgress
			if ev.Type == bus.TypeTaskProgress && ev.DataAs(&p) == nil {
				e.setStatus(StateWorking, agentMessage(id, conv, p.Message))
			}
		case o := <-done:
			ts.drain(text) // the text written before the result goes first
			if o.err != nil {
				e.setStatus(StateFailed, agentMessage(id, conv, fmt.Sprintf("no result from %s: %v", r.agent, o.err)))
				return
			}
			res := o.res.Result
			if res.Success {
				for _, a := range artifactsOf(c, res) {
					e.addArtifact(a)
				}
				e.setStatus(StateCompleted, agentMessage(id, conv, res.Summary))
				return
			}
			state, text := StateFailed, "the task failed"
			if res.Error != nil {
				text = fmt.Sprintf("%s: %s", res.Error.Code, res.Error.Message)
				if res.Error.Code == schemas.CodeCancelled {
					state = StateCanceled
				}
			}
			m := agentMessage(id, conv, text)
			if res.Error != nil {
				m.Metadata = map[string]any{"code": res.Error.Code}
			}
			e.setStatus(state, m)
			return
		}
	}
}

// cancelWait bounds how long CancelTask waits for the task to end.
const cancelWait = 10 * time.Second

// cancelTask asks the agent running a task to stop it and waits (at most
// cancelWait) for the task to end; a task no instance has taken yet stays
// as it is.
func (h *Handler) cancelTask(ctx context.Context, req Request, run taskRunner) (Task, error) {
	var p CancelTaskRequest
	if err := decodeParams(req, &p); err != nil {
		return Task{}, err
	}
	e, err := h.lookup(p.ID, run)
	if err != nil {
		return Task{}, err
	}
	if s := e.state(); s.Terminal() {
		return Task{}, fmt.Errorf("%w: task %q has ended (%s)", ErrTaskNotCancelable, p.ID, s)
	}
	if e.kind == kindChat {
		return Task{}, fmt.Errorf("%w: task %q is a chat turn, which the mesh cannot stop once asked", ErrTaskNotCancelable, p.ID)
	}
	subj, err := h.names.Control(e.agent)
	if err != nil {
		return Task{}, err
	}
	body, _ := json.Marshal(map[string]string{"taskid": p.ID})
	wctx, cancel := context.WithTimeout(ctx, cancelWait)
	defer cancel()
	// Only the instance running the task answers; one still queued (or
	// just being taken) hears nothing, so ask again until one answers.
	for !e.settled() {
		rctx, rcancel := context.WithTimeout(wctx, 250*time.Millisecond)
		_, err := h.nc.RequestWithContext(rctx, subj, body)
		rcancel()
		if err == nil {
			break
		}
		if wctx.Err() != nil {
			return e.snapshot(nil), nil // not running anywhere yet: the state says so
		}
	}
	e.wait(wctx)
	return e.snapshot(nil), nil
}

// contextOf is msg's context id, or a new one.
func contextOf(msg *Message) string {
	if msg.ContextID != "" {
		return msg.ContextID
	}
	return uuid.NewString()
}

// userMessage is msg as the task's history keeps it: file bytes are not
// kept, a text part says what was there.
func userMessage(msg *Message, taskID string) Message {
	m := *msg
	m.TaskID = taskID
	m.Parts = make([]Part, len(msg.Parts))
	for i, p := range msg.Parts {
		if p.Raw != nil {
			p = TextPart(fmt.Sprintf("[file %q, %s, %d bytes]", p.Filename, p.MediaType, len(p.Raw)))
		}
		m.Parts[i] = p
	}
	return m
}

// agentMessage is a text message from the agent about a task.
func agentMessage(taskID, contextID, text string) *Message {
	if text == "" {
		return nil
	}
	return &Message{MessageID: uuid.NewString(), ContextID: contextID, TaskID: taskID, Role: RoleAgent, Parts: []Part{TextPart(text)}}
}
