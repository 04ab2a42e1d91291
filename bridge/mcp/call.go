package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// awaitGrace is how long past a task's deadline a tool call waits for the
// agent's own timeout answer before answering timeout itself.
const awaitGrace = 5 * time.Second

// callAgent is the handler of the tool of agent name: the arguments become
// a task on mesh.task.<agent> (the durable path), the agent's progress
// events become progress notifications, and its result the tool result.
func (s *Server) callAgent(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		info, ok := s.reg.Lookup(name)
		if !ok {
			return toolError(schemas.CodeUnavailable, fmt.Sprintf("agent %s has no live instance any more; list the tools again", name), true), nil
		}
		c := info.Contract
		task, err := TaskFromArgs(c, req.Params.Arguments)
		if err != nil {
			code := schemas.CodeInvalidParams
			if errors.Is(err, ErrBadInput) {
				code = schemas.CodeInvalidInput
			}
			return toolError(code, err.Error(), false), nil
		}
		timeout := s.cfg.timeout
		if c.TimeoutMS > 0 {
			timeout = time.Duration(c.TimeoutMS) * time.Millisecond
		}
		task.TimeoutMS = timeout.Milliseconds()
		taskID := "mcp-" + uuid.NewString()
		replyTo := s.cfg.replyTo(name, taskID)
		p := newProgress(ctx, req)
		if p != nil {
			stopText := s.forwardTaskText(ctx, p, taskID)
			defer func() { stopText(); p.close() }() // after the progress the stream still holds
			stop := s.forwardTaskProgress(ctx, p, taskID)
			defer stop()
			p.send(ctx, "sent to "+name)
		}
		meta := client.DispatchMeta{TaskID: taskID, ReplyTo: replyTo, Deadline: time.Now().Add(timeout)}
		if _, err := s.disp.Dispatch(ctx, name, task, meta); err != nil {
			return toolError(schemas.CodeInternal, err.Error()+"; call the tool again", true), nil
		}
		wait, cancel := context.WithTimeout(ctx, timeout+awaitGrace)
		defer cancel()
		res, err := s.disp.Await(wait, replyTo, taskID)
		switch {
		case ctx.Err() != nil:
			s.cancelTask(name, taskID) // the client cancelled the call
			return nil, ctx.Err()
		case errors.Is(err, client.ErrUndecodableResult):
			return toolError(schemas.CodeMalformedResult, err.Error(), false), nil
		case err != nil:
			s.cancelTask(name, taskID)
			return toolError(schemas.CodeTimeout, fmt.Sprintf("%s did not answer task %s within %s", name, taskID, timeout), true), nil
		}
		return toolResult(res.Result), nil
	}
}

// cancelTask asks the agent's instances to stop taskID (best effort).
func (s *Server) cancelTask(agent, taskID string) {
	subj, err := s.cfg.names.Control(agent)
	if err != nil {
		return
	}
	b, _ := json.Marshal(map[string]string{"taskid": taskID})
	_ = s.nc.Publish(subj, b)
}

// forwardTaskProgress follows the task's progress events
// (mesh.events.<taskid>.task) and sends each as a progress notification
// until the returned stop is called. Stop first forwards what the stream
// already holds (progress travels apart from the result, so it can arrive
// after it), for at most a second: no notification may follow the answer.
func (s *Server) forwardTaskProgress(ctx context.Context, p *progress, taskID string) (stop func()) {
	subject := s.cfg.names.Events(taskID, "task")
	events, stopFollow, err := client.Follow(ctx, s.js, s.cfg.names, subject, false)
	if err != nil {
		s.cfg.log.Warn("following task progress", "task", taskID, "err", err)
		return func() {}
	}
	last := make(chan string, 1) // the id of the last event stored, once the task ended
	done := make(chan struct{})
	go func() {
		defer close(done)
		var until string
		var limit <-chan time.Time
		seen := map[string]bool{}
		for {
			select {
			case <-ctx.Done():
				return
			case until = <-last:
				if until == "" || seen[until] {
					return
				}
				limit = time.After(time.Second)
			case <-limit:
				return
			case ev := <-events:
				seen[ev.ID] = true
				var tp schemas.TaskProgress
				if ev.Type == bus.TypeTaskProgress && ev.DataAs(&tp) == nil {
					p.send(ctx, progressMessage(tp))
				}
				if until != "" && ev.ID == until {
					return
				}
			}
		}
	}()
	return func() {
		last <- s.lastEventID(ctx, subject)
		<-done
		stopFollow()
	}
}

// lastEventID is the id of the last event stored on subject in the events
// stream, or "" when there is none.
func (s *Server) lastEventID(ctx context.Context, subject string) string {
	ev, err := client.LastEvent(ctx, s.js, s.cfg.names, subject)
	if err != nil {
		return ""
	}
	return ev.ID
}

func progressMessage(tp schemas.TaskProgress) string {
	msg := tp.Message
	if tp.Agent != "" {
		msg = tp.Agent + ": " + msg
	}
	if tp.Percent > 0 {
		msg += fmt.Sprintf(" (%.0f%%)", tp.Percent)
	}
	return msg
}

// progress sends notifications/progress for one request that asked for
// them (with a progress token). Progress counts the notifications, so it
// increases with each as the protocol requires; the message says what
// happened.
type progress struct {
	req    *mcp.CallToolRequest
	token  any
	mu     sync.Mutex
	n      float64
	closed bool // the answer is on its way: no more notifications
}

// newProgress returns nil when the request carries no progress token.
func newProgress(_ context.Context, req *mcp.CallToolRequest) *progress {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil {
		return nil
	}
	return &progress{req: req, token: tok}
}

func (p *progress) send(ctx context.Context, message string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.n++
	_ = p.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.n, Message: message})
}

// toolError is a tool result with isError set: the text is
// "<code>: <message>", the structured content {code, message, retryable}.
func toolError(code, message string, retryable bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: code + ": " + message}},
		StructuredContent: map[string]any{"code": code, "message": message, "retryable": retryable},
	}
}

// toolResult maps an agent's result: a failure is a tool error with the
// result's code; a success is the summary and one text block per output
// (a TEXT output as its text, any other as its typed value in JSON), and
// structured content {summary, outputs}.
func toolResult(res schemas.AgentResult) *mcp.CallToolResult {
	if !res.Success {
		code, msg, retry := schemas.CodeAgentError, "the agent failed without saying why", false
		if res.Error != nil {
			code, msg, retry = res.Error.Code, res.Error.Message, res.Error.Retryable
		}
		return toolError(code, msg, retry)
	}
	out := &mcp.CallToolResult{}
	if res.Summary != "" {
		out.Content = append(out.Content, &mcp.TextContent{Text: res.Summary})
	}
	for _, name := range slices.Sorted(maps.Keys(res.Outputs)) {
		v := res.Outputs[name]
		if s, err := v.Text(); err == nil && v.DataType == schemas.TypeText {
			out.Content = append(out.Content, &mcp.TextContent{Text: s})
			continue
		}
		js, _ := json.Marshal(map[string]any{"output": name, "data_type": v.DataType, "value": v.Value})
		out.Content = append(out.Content, &mcp.TextContent{Text: string(js)})
	}
	if len(out.Content) == 0 {
		out.Content = []mcp.Content{&mcp.TextContent{Text: strings.TrimSpace(res.Agent + " completed")}}
	}
	outputs := map[string]schemas.TypedValue{}
	for k, v := range res.Outputs {
		outputs[k] = v
	}
	out.StructuredContent = map[string]any{"summary": res.Summary, "outputs": outputs}
	return out
}
