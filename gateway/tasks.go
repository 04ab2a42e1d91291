package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/schemas"
)

// TaskRequest is the body of POST /api/agents/{name}/tasks.
type TaskRequest struct {
	Inputs      map[string]schemas.TypedValue `json:"inputs,omitempty"`
	Params      map[string]any                `json:"params,omitempty"`
	Instruction string                        `json:"instruction,omitempty"`
	TimeoutMS   int64                         `json:"timeout_ms,omitempty"`
}

// TaskAnswer is the answer of POST /api/agents/{name}/tasks: the task's
// id, and when it was awaited its result.
type TaskAnswer struct {
	TaskID string               `json:"task_id"`
	Result *schemas.AgentResult `json:"result,omitempty"`
}

// taskFailure is the error answer of an awaited task that failed: the
// error, with the task id and the whole result.
type taskFailure struct {
	Error  *apiError           `json:"error"`
	TaskID string              `json:"task_id"`
	Result schemas.AgentResult `json:"result"`
}

// maxTaskTimeout bounds timeout_ms: a request waits that long at most.
const maxTaskTimeout = time.Hour

// handleTask publishes one task to the agent through MESH_TASKS, as
// agentmesh task does, and waits for its result unless ?wait=false.
func (g *Gateway) handleTask(w http.ResponseWriter, r *http.Request, c *conn) error {
	agent := r.PathValue("name")
	if err := bus.ValidateAgentName(agent); err != nil {
		return fail(schemas.CodeInvalidInput, "agent name %q: %v", agent, err)
	}
	wait, err := boolParam(r, "wait", true)
	if err != nil {
		return err
	}
	var req TaskRequest
	if err := g.decodeJSON(w, r, &req); err != nil {
		return err
	}
	timeout := g.cfg.taskTimeout
	if req.TimeoutMS < 0 || time.Duration(req.TimeoutMS)*time.Millisecond > maxTaskTimeout {
		return fail(schemas.CodeInvalidInput, "timeout_ms %d: give a positive number of milliseconds up to %d", req.TimeoutMS, maxTaskTimeout.Milliseconds())
	}
	if req.TimeoutMS > 0 {
		timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	if _, ok := c.reg.Lookup(agent); !ok {
		return fail(schemas.CodeUnknownAgent, "no live agent %q: start it (agentmesh agent %s) or pick one of GET /api/agents", agent, agent)
	}
	task := schemas.TaskRequest{Inputs: req.Inputs, Params: req.Params, Instruction: req.Instruction, TimeoutMS: timeout.Milliseconds()}
	meta := client.DispatchMeta{TaskID: uuid.NewString(), Deadline: time.Now().Add(timeout)}
	meta.ReplyTo = c.names.Result(agent, meta.TaskID)
	if c.id.Role == bus.RoleClient { // where only this client may read it
		meta.ReplyTo = c.names.ClientResult(agent, c.id.Name, meta.TaskID)
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout+5*time.Second)
	defer cancel()
	// Listen before publishing, as agentmesh task does: a core subscription
	// costs the server nothing to keep, where a consumer per awaited task
	// would pile up on the results stream under load.
	var sub *nats.Subscription
	if wait {
		if sub, err = c.nc.SubscribeSync(meta.ReplyTo); err != nil {
			return meshError("listening for the result", err)
		}
		defer func() { _ = sub.Unsubscribe() }()
	}
	if _, err := c.disp.Dispatch(ctx, agent, task, meta); err != nil {
		return meshError("publishing the task to "+agent, err)
	}
	if !wait {
		writeJSON(w, http.StatusAccepted, TaskAnswer{TaskID: meta.TaskID})
		return nil
	}
	res, err := awaitResult(ctx, sub)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fail(schemas.CodeTimeout, "no result for task %s within %s: is %s running? (GET /api/agents/%s)", meta.TaskID, timeout, agent, agent)
		}
		return meshError("awaiting task "+meta.TaskID, err)
	}
	if !res.Success {
		code, msg := schemas.CodeAgentError, "the task failed"
		if e := res.Error; e != nil {
			code, msg = e.Code, e.Message
		}
		ae := &apiError{Status: statusOf(code), Code: code, Message: agent + ": " + msg}
		writeJSON(w, ae.Status, taskFailure{Error: ae, TaskID: meta.TaskID, Result: res})
		return nil
	}
	writeJSON(w, http.StatusOK, TaskAnswer{TaskID: meta.TaskID, Result: &res})
	return nil
}

// awaitResult reads the task's result from sub.
func awaitResult(ctx context.Context, sub *nats.Subscription) (schemas.AgentResult, error) {
	var res schemas.AgentResult
	msg, err := sub.NextMsgWithContext(ctx)
	if err != nil {
		return res, err
	}
	ev, err := bus.Decode(msg)
	if err != nil {
		return res, fail(schemas.CodeMalformedResult, "the agent's result does not decode: %v", err)
	}
	if err := ev.DataAs(&res); err != nil {
		return res, fail(schemas.CodeMalformedResult, "the agent's result does not decode: %v", err)
	}
	return res, nil
}

// taskPoll is how long GET /api/agents/{name}/tasks/{id} looks for a
// result before answering that there is none yet.
const taskPoll = 2 * time.Second

// handleTaskResult answers a task sent with ?wait=false: its result from
// the results stream (kept 24 hours by default), or 202 while there is
// none yet.
func (g *Gateway) handleTaskResult(w http.ResponseWriter, r *http.Request, c *conn) error {
	agent, id := r.PathValue("name"), r.PathValue("id")
	if err := bus.ValidateAgentName(agent); err != nil {
		return fail(schemas.CodeInvalidInput, "agent name %q: %v", agent, err)
	}
	if err := bus.ValidateToken("task id", id); err != nil {
		return fail(schemas.CodeInvalidID, "%v", err)
	}
	replyTo := c.names.Result(agent, id)
	if c.id.Role == bus.RoleClient {
		replyTo = c.names.ClientResult(agent, c.id.Name, id)
	}
	ctx, cancel := context.WithTimeout(r.Context(), taskPoll)
	defer cancel()
	res, err := c.disp.Await(ctx, replyTo, id)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		writeJSON(w, http.StatusAccepted, TaskAnswer{TaskID: id})
		return nil
	case err != nil:
		return meshError("reading the result of task "+id, err)
	}
	writeJSON(w, http.StatusOK, TaskAnswer{TaskID: id, Result: &res.Result})
	return nil
}

// boolParam reads a true/false query parameter.
func boolParam(r *http.Request, name string, def bool) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "":
		return def, nil
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	default:
		return false, fail(schemas.CodeInvalidRequest, "?%s=%s: give true or false", name, v)
	}
}
