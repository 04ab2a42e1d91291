package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// An agent step whose agent answers code approval_required (FolderAgent
// with require_approval, say) waits for a person as an approval step
// does: the header lists it under Waiting with the agent's message (what
// it would do), a step.waiting event says so, and `agentmesh approve`
// resolves it. Approved, its task goes out again as attempt 2 with the
// param approved: true, and the step ends with that task's result;
// rejected (or nobody answering by the step's timeout), it fails with code
// rejected and the agent never did what it asked about.

// approvalAttempt is the attempt of the task sent after a person approved.
const approvalAttempt = 2

// asksApproval reports whether res, the result of the first task of an
// agent step, asks for a person's approval.
func asksApproval(sd *state.RunSpec, stepID, taskID string, res schemas.AgentResult) bool {
	return !res.Success && res.Error != nil && res.Error.Code == schemas.CodeApprovalRequired &&
		taskID == pipelinespec.StepTaskID(sd.ID, stepID, 1, sd.Nonce)
}

// awaitApproval lists the step under Waiting and says so with a
// step.waiting event; a step already waiting, or approved, is left alone.
func awaitApproval(ctx context.Context, e env, sd *state.RunSpec, stepID string, res schemas.AgentResult) error {
	reason := "approval: " + res.Error.Message
	if _, err := e.record(ctx, sd.ID, stepID); !errors.Is(err, state.ErrNotFound) {
		return err // nil: the step has ended, this answer is late
	}
	next, err := e.amend(ctx, sd.ID, func(h *state.RunHeader) error {
		if !h.Running(sd, stepID) || h.Waiting[stepID] != "" || h.Approved[stepID] != "" {
			return state.ErrUnchanged
		}
		if h.Waiting == nil {
			h.Waiting = map[string]string{}
		}
		h.Waiting[stepID] = reason
		return nil
	})
	if errors.Is(err, state.ErrUnchanged) {
		return nil
	}
	if err != nil {
		return err
	}
	step, _ := sd.Step(stepID)
	e.emitStep(sd, schemas.StepEvent{RunID: sd.ID, Step: stepID, Agent: step.Agent, Status: schemas.StepWaiting, Wave: next.Wave,
		Attempt: 1, TaskID: pipelinespec.StepTaskID(sd.ID, stepID, 1, sd.Nonce), Reason: reason, Summary: res.Summary, At: time.Now().UTC()})
	return nil
}

// resolveAgent applies a person's decision to an agent step that waits
// for approval: see the top of this file.
func resolveAgent(ctx context.Context, e env, sd *state.RunSpec, step pipelinespec.PipelineStep, r pipelinespec.Resolution, at time.Time) error {
	h, err := e.header(ctx, r.RunID, true)
	if err != nil {
		return err
	}
	if !h.Running(sd, r.Step) || h.Waiting[r.Step] == "" {
		why := "its agent did not ask for approval"
		if !h.Running(sd, r.Step) {
			why = notWaitingWhy(ctx, e, sd, h, r.Step)
		}
		return refuse(schemas.CodeNotWaiting, "%w: run %s has no approval or input step %q waiting for a person: it is a step of agent %s, and %s",
			ErrNotWaiting, r.RunID, r.Step, step.Agent, why)
	}
	if r.Decision == "" || r.Value != nil {
		return refuse(schemas.CodeInvalidInput, "step %q of run %s waits for its agent's request for approval: answer it with a decision (approve or reject) and no value", r.Step, r.RunID)
	}
	by := r.By
	if by == "" {
		by = "someone"
	}
	if r.Decision == pipelinespec.DecisionReject {
		rec := humanRecord(sd, h, step, r.Decision, nil, by, r.Comment, at)
		rec.Agent = step.Agent
		return recordResolution(ctx, e, sd, r, rec)
	}
	// Sent before the header says so: a request redelivered after a crash
	// between the two sends the same task id, which the stream stores once.
	agent, task, meta, err := stepTask(ctx, e, stepStart{sd: sd, h: h, id: r.Step})
	if err != nil {
		return err
	}
	task.Params = maps.Clone(task.Params)
	if task.Params == nil {
		task.Params = map[string]any{}
	}
	task.Params["approved"] = true
	meta.TaskID = pipelinespec.StepTaskID(sd.ID, r.Step, approvalAttempt, sd.Nonce)
	if err := e.dispatch(ctx, agent, task, meta, true); err != nil {
		return err
	}
	approval := "approved by " + by
	if r.Comment != "" {
		approval += ": " + r.Comment
	}
	_, err = e.amend(ctx, sd.ID, func(h *state.RunHeader) error {
		if !h.Running(sd, r.Step) || h.Waiting[r.Step] == "" {
			return state.ErrUnchanged
		}
		unmarkWaiting(h, r.Step)
		if h.Approved == nil {
			h.Approved = map[string]string{}
		}
		h.Approved[r.Step] = approval
		return nil
	})
	if errors.Is(err, state.ErrUnchanged) {
		return refuse(schemas.CodeNotWaiting, "%w: step %q of run %s was answered already", ErrNotWaiting, r.Step, r.RunID)
	}
	return err
}

// approvedSummary prefixes the summary of a step a person approved.
func approvedSummary(h *state.RunHeader, stepID, summary string) string {
	if a := h.Approved[stepID]; a != "" {
		return fmt.Sprintf("%s; %s", a, summary)
	}
	return summary
}
