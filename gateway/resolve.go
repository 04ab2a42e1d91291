package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/internal/stateview"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// resolveWait is how long POST .../approve and .../input wait for an
// orchestrator to apply the answer before answering 202 (it is stored and
// will be applied).
const resolveWait = 10 * time.Second

// ApproveRequest is the body of POST /api/runs/{id}/steps/{step}/approve.
type ApproveRequest struct {
	Reject  bool   `json:"reject,omitempty"`
	Comment string `json:"comment,omitempty"`
	By      string `json:"by,omitempty"`
}

// InputRequest is the body of POST /api/runs/{id}/steps/{step}/input.
type InputRequest struct {
	Value   any    `json:"value"`
	Comment string `json:"comment,omitempty"`
	By      string `json:"by,omitempty"`
}

// Resolved is the answer of approve and input: the resolve request's id
// and, once an orchestrator applied it (200), the step's event; 202 with
// status "pending" when none did within resolveWait.
type Resolved struct {
	RequestID string             `json:"request_id"`
	Status    string             `json:"status"` // "applied" or "pending"
	Step      *schemas.StepEvent `json:"step,omitempty"`
}

func (g *Gateway) handleApprove(w http.ResponseWriter, r *http.Request, c *conn) error {
	run, step, err := runStep(r)
	if err != nil {
		return err
	}
	var req ApproveRequest
	if err := g.decodeJSON(w, r, &req); err != nil {
		return err
	}
	res := pipelinespec.Resolution{RunID: run, Step: step, Decision: "approve", Comment: req.Comment, By: req.By}
	if req.Reject {
		res.Decision = "reject"
	}
	return g.resolve(w, r, c, res)
}

func (g *Gateway) handleInput(w http.ResponseWriter, r *http.Request, c *conn) error {
	run, step, err := runStep(r)
	if err != nil {
		return err
	}
	var req InputRequest
	if err := g.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Value == nil {
		return fail(schemas.CodeInvalidInput, "the body has no value; send {\"value\": ...}, a value of the step's data type (a string for TEXT)")
	}
	return g.resolve(w, r, c, pipelinespec.Resolution{RunID: run, Step: step, Value: req.Value, Comment: req.Comment, By: req.By})
}

func runStep(r *http.Request) (string, string, error) {
	run, step := r.PathValue("id"), r.PathValue("step")
	if err := bus.ValidateToken("run id", run); err != nil {
		return "", "", fail(schemas.CodeInvalidID, "%v", err)
	}
	if err := bus.ValidateToken("step id", step); err != nil {
		return "", "", fail(schemas.CodeInvalidID, "%v", err)
	}
	return run, step, nil
}

// resolve publishes res, as agentmesh approve and input do, and waits for
// the orchestrator's outcome on the run's events: the step's end (200), a
// refusal naming the request (its code: 409 not_waiting, 400 for a value
// of the wrong type), or nothing within resolveWait (202 pending).
func (g *Gateway) resolve(w http.ResponseWriter, r *http.Request, c *conn, res pipelinespec.Resolution) error {
	ctx, cancel := context.WithTimeout(r.Context(), resolveWait)
	defer cancel()
	events, stop, err := client.Follow(ctx, c.js, c.names, c.names.EventsOf(res.RunID), true) // owned or not: the step's events are the owner's, a refusal the sender's
	if err != nil {
		return meshError("following run "+res.RunID, err)
	}
	defer stop()
	if res.By == "" {
		res.By = g.cfg.source
	}
	id, err := client.ResolveStep(ctx, c.js, c.names, res, g.cfg.source)
	if err != nil {
		return meshError("answering step "+res.Step, err)
	}
	for {
		select {
		case <-ctx.Done():
			writeJSON(w, http.StatusAccepted, Resolved{RequestID: id, Status: "pending"})
			return nil
		case ev := <-events:
			switch {
			case ev.Type == bus.TypeResolveRefused:
				var rr pipelinespec.ResolveRefusal
				if ev.DataAs(&rr) == nil && rr.Request == id {
					return fail(rr.Code, "%s", rr.Error)
				}
			case ev.Type == bus.TypeStepCompleted || ev.Type == bus.TypeStepFailed:
				var se schemas.StepEvent
				if ev.DataAs(&se) == nil && se.Step == res.Step {
					writeJSON(w, http.StatusOK, Resolved{RequestID: id, Status: "applied", Step: &se})
					return nil
				}
			}
		}
	}
}

// Cancelled is the answer of POST /api/runs/{id}/cancel.
type Cancelled struct {
	RunID string `json:"run_id"`
	// Tasks are the running steps whose tasks were asked to stop; their
	// agents answer cancelled and the run fails with step_failed. A step
	// of a child run (of a running pipeline step) is <step>/<child step>.
	Tasks []string `json:"tasks"`
	// Rejected are the approval and input steps that waited for a person,
	// answered with a rejection.
	Rejected []string `json:"rejected"`
}

// handleCancel stops a run the way the mesh can: it asks the agent of every
// running step to cancel its task (mesh.control.<agent>) and rejects every
// step waiting for a person, so the run fails and its later steps are
// skipped. The child run of a running step of kind pipeline is cancelled
// the same way (its entries are named <step>/<child step>), so the step
// fails as its child does. A task an instance has not taken yet is not
// reached (it runs when taken, and its result is then applied to the
// failed run's nothing).
func (g *Gateway) handleCancel(w http.ResponseWriter, r *http.Request, c *conn) error {
	run, err := g.loadRun(r, c)
	if err != nil {
		return err
	}
	if run.Done() {
		return fail(schemas.CodeNotWaiting, "run %s has ended (%s); nothing to cancel", run.ID, run.Status)
	}
	out := Cancelled{RunID: run.ID, Tasks: []string{}, Rejected: []string{}}
	if err := g.cancelSteps(r, c, run, "", "", pipelinespec.MaxPipelineDepth, &out); err != nil {
		return err
	}
	if err := c.nc.Flush(); err != nil {
		return meshError("cancelling run "+run.ID, err)
	}
	writeJSON(w, http.StatusAccepted, out)
	return nil
}

func findStep(steps []pipelinespec.PipelineStep, id string) (pipelinespec.PipelineStep, bool) {
	for _, s := range steps {
		if s.ID == id {
			return s, true
		}
	}
	return pipelinespec.PipelineStep{}, false
}

// cancelSteps asks the agents of run's running steps to cancel their
// tasks, rejects its waiting approval steps and, depth levels down, cancels
// the child runs of its running pipeline steps; out gets each, named
// prefix+step. parent is the run whose cancel reaches run ("" for itself).
func (g *Gateway) cancelSteps(r *http.Request, c *conn, run *stateview.RunState, parent, prefix string, depth int, out *Cancelled) error {
	ids := make([]string, 0, len(run.Steps))
	for id := range run.Steps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	comment := "run cancelled"
	if parent != "" {
		comment = "run cancelled: its parent run " + parent + " was cancelled"
	}
	for _, id := range ids {
		st := run.Steps[id]
		step, _ := findStep(run.Spec.Steps, id)
		switch {
		case st.Status == schemas.StepRunning && step.Kind == pipelinespec.StepKindPipeline && depth > 0:
			store, err := c.needStore()
			if err != nil {
				return err
			}
			child, err := store.Run(r.Context(), run.ID+"-"+id)
			if err != nil || child.Done() {
				continue // not started yet, or ended: nothing to cancel
			}
			if err := g.cancelSteps(r, c, child, run.ID, prefix+id+"/", depth-1, out); err != nil {
				return err
			}
		case st.Status == schemas.StepRunning && st.TaskID != "" && st.Agent != "":
			subj, err := c.names.Control(st.Agent)
			if err != nil {
				continue
			}
			body, _ := json.Marshal(map[string]string{"taskid": st.TaskID})
			if err := c.nc.Publish(subj, body); err != nil {
				return meshError("cancelling step "+prefix+id, err)
			}
			out.Tasks = append(out.Tasks, prefix+id)
		case st.Status == schemas.StepWaiting:
			if step.Kind == pipelinespec.StepKindInput {
				continue // an input step has no rejection; its timeout and default apply
			}
			res := pipelinespec.Resolution{RunID: run.ID, Step: id, Decision: "reject", Comment: comment, By: g.cfg.source, Cancel: true}
			if _, err := client.ResolveStep(r.Context(), c.js, c.names, res, g.cfg.source); err != nil {
				return meshError("cancelling step "+prefix+id, err)
			}
			out.Rejected = append(out.Rejected, prefix+id)
		}
	}
	return nil
}
