package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// agentKind runs a step as one task of its agent: the task goes to
// mesh.task.<agent> with the deterministic id <run>-<step>-1 and the run's
// results subject as replyto, and the step ends when its result is applied
// (ApplyResult) or the sweep times it out.
type agentKind struct{ oneTask }

// owns: its task, or the one sent after a person approved (see
// agent_approval.go).
func (agentKind) owns(sd *state.RunSpec, id, taskID string) bool {
	return taskID == pipelinespec.StepTaskID(sd.ID, id, 1, sd.Nonce) || taskID == pipelinespec.StepTaskID(sd.ID, id, approvalAttempt, sd.Nonce)
}

// result ends the step with its agent's result, unless the agent asks for
// a person's approval (the step then waits for it).
func (agentKind) result(ctx context.Context, e env, sd *state.RunSpec, h *state.RunHeader, id, taskID string, res schemas.AgentResult) error {
	h, err := e.inWave(ctx, sd, h, id)
	if err != nil || h == nil {
		return err
	}
	if taskID == pipelinespec.StepTaskID(sd.ID, id, approvalAttempt, sd.Nonce) && h.Waiting[id] != "" {
		// The approved task goes out before the header records the
		// approval (resolveAgent): a quick answer can beat that
		// write, and is handled again once it is in.
		if h, err = e.header(ctx, sd.ID, true); err != nil {
			return err
		}
		if h.Waiting[id] != "" {
			return fmt.Errorf("%w: step %q of run %s answered its approved task before the approval was recorded", ErrEarly, id, sd.ID)
		}
	}
	if asksApproval(sd, id, taskID, res) {
		return awaitApproval(ctx, e, sd, id, res)
	}
	return e.settle(ctx, sd, nil, []*state.StepState{resultRecord(sd, h, id, taskID, res, time.Now().UTC())})
}

// expire: an agent that asked for approval and got none is rejected.
func (k agentKind) expire(sd *state.RunSpec, h *state.RunHeader, id string, deadline, now time.Time) *state.StepState {
	if w := h.Waiting[id]; w != "" {
		return failedRecord(sd, h, id, schemas.CodeRejected, fmt.Sprintf("rejected by default (no answer within %s) to %s", sd.Timeout(id), w), now)
	}
	return k.oneTask.expire(sd, h, id, deadline, now)
}

// cancel: its task, and the one sent after a person approved.
func (agentKind) cancel(_ context.Context, e env, sd *state.RunSpec, id string, c stepCancel) {
	if step, _ := sd.Step(id); c.tasks && step.Agent != "" {
		e.stopTasks(sd, step.Agent, []string{pipelinespec.StepTaskID(sd.ID, id, 1, sd.Nonce), pipelinespec.StepTaskID(sd.ID, id, approvalAttempt, sd.Nonce)})
	}
}

// start builds the step's inputs and publishes its task. Without confirm
// the publish does not wait for the stream (see meshcore.Dispatcher.Send): a
// task that was not stored is published again by the sweep, with confirm,
// which reports the stream's reason for a refusal: a stream at a limit
// fails the step with backlog_full. A required input that nothing fills
// ends the step at once, failed.
func (agentKind) start(ctx context.Context, e env, st stepStart) (*state.StepState, error) {
	agent, task, meta, err := stepTask(ctx, e, st)
	if errors.Is(err, route.ErrMissingInput) && !st.ahead() {
		return failedRecord(st.sd, st.h, st.id, schemas.CodeInvalidInput, err.Error(), time.Now().UTC()), err
	}
	if err != nil {
		return nil, err
	}
	if st.confirm {
		err = e.dispatch(ctx, agent, task, meta, true)
		if errors.Is(err, bus.ErrBacklogFull) {
			// MESH_TASKS or the account is at a limit: waiting for the
			// step's timeout would only hold the run.
			return failedRecord(st.sd, st.h, st.id, schemas.CodeBacklogFull, fmt.Sprintf("step %q (%s): %v", st.id, agent, err), time.Now().UTC()), err
		}
		return nil, err
	}
	return nil, e.dispatch(ctx, agent, task, meta, false)
}

// errNeedsSlots is a step whose inputs read the run's slots, built where
// they may not hold all they will (see dispatchAhead).
var errNeedsSlots = errors.New("inputs read the run's slots")

// stepTask builds the task of a step of the wave in progress; started
// ahead, it refuses (errNeedsSlots) a step whose inputs read the run's slots.
func stepTask(ctx context.Context, e env, st stepStart) (string, schemas.TaskRequest, meshcore.DispatchMeta, error) {
	sd, h, id := st.sd, st.h, st.id
	var slots map[string]schemas.TypedValue
	inputs, err := stepInputs(ctx, e.config().router, sd, id,
		func(p string) (*state.StepState, error) {
			for _, rec := range st.pending {
				if rec.ID == p {
					return rec, nil
				}
			}
			return e.record(ctx, sd.ID, p)
		},
		func() (map[string]schemas.TypedValue, error) {
			if st.noSlots {
				return nil, errNeedsSlots
			}
			var err error
			if slots == nil {
				slots, err = e.slots(ctx, sd.ID)
			}
			return slots, err
		})
	step, _ := sd.Step(id)
	if err != nil {
		return "", schemas.TaskRequest{}, meshcore.DispatchMeta{}, fmt.Errorf("step %q (%s): %w", id, step.Agent, err)
	}
	params, err := resolveParams(step.Params, sd.Spec.Vars)
	if err != nil {
		return "", schemas.TaskRequest{}, meshcore.DispatchMeta{}, fmt.Errorf("step %q (%s): %w", id, step.Agent, err)
	}
	timeout := sd.Timeout(id)
	left, key := budgetLeft(sd, h), ""
	if left != nil {
		key = waveBudgetKey(h) // the wave's steps share what is left
	}
	return step.Agent, schemas.TaskRequest{Inputs: inputs, Params: params, TimeoutMS: timeout.Milliseconds(), Budget: left, BudgetKey: key}, meshcore.DispatchMeta{
		TaskID: pipelinespec.StepTaskID(sd.ID, id, 1, sd.Nonce), RunID: sd.ID, StepID: id, Deadline: h.WaveStartedAt.Add(timeout), Owner: sd.Owner,
		TraceParent: telemetry.StepTraceParent(sd.TraceParent, sd.ID, id), Version: step.Version,
	}, nil
}

// republishWithin bounds how long after a wave started its tasks may be
// published again: well inside the tasks stream's duplicate window, so a
// task published twice is stored once.
const republishWithin = time.Minute

// isAgentStep reports whether step runs one task of its agent.
func isAgentStep(step pipelinespec.PipelineStep) bool {
	return step.Kind == "" || step.Kind == KindAgent
}
