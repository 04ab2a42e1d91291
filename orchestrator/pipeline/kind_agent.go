package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
	"github.com/agentmesh/agentmesh/telemetry"
)

// agentKind runs a step as one task of its agent: the task goes to
// mesh.task.<agent> with the deterministic id <run>-<step>-1 and the run's
// results subject as replyto, and the step ends when its result is applied
// (ApplyResult) or the sweep times it out.
type agentKind struct{}

// start builds the step's inputs and publishes its task. Without confirm
// the publish does not wait for the stream (see client.Dispatcher.Send): a
// task that was not stored is published again by the sweep, with confirm,
// which reports the stream's reason for a refusal: a stream at a limit
// fails the step with backlog_full. A required input that nothing fills
// ends the step at once, failed.
func (agentKind) start(ctx context.Context, s *Scheduler, st stepStart) (*state.StepState, error) {
	agent, task, meta, err := s.stepTask(ctx, st)
	if errors.Is(err, route.ErrMissingInput) && !st.ahead() {
		return failedRecord(st.sd, st.h, st.id, schemas.CodeInvalidInput, err.Error(), time.Now().UTC()), err
	}
	if err != nil {
		return nil, err
	}
	if st.confirm {
		_, err = s.dispatcher.Dispatch(ctx, agent, task, meta)
		if errors.Is(err, bus.ErrBacklogFull) {
			// MESH_TASKS or the account is at a limit: waiting for the
			// step's timeout would only hold the run.
			return failedRecord(st.sd, st.h, st.id, schemas.CodeBacklogFull, fmt.Sprintf("step %q (%s): %v", st.id, agent, err), time.Now().UTC()), err
		}
		return nil, err
	}
	return nil, s.dispatcher.Send(agent, task, meta)
}

// errNeedsSlots is a step whose inputs read the run's slots, built where
// they may not hold all they will (see dispatchAhead).
var errNeedsSlots = errors.New("inputs read the run's slots")

// stepTask builds the task of a step of the wave in progress; started
// ahead, it refuses (errNeedsSlots) a step whose inputs read the run's slots.
func (s *Scheduler) stepTask(ctx context.Context, st stepStart) (string, schemas.TaskRequest, client.DispatchMeta, error) {
	sd, h, id := st.sd, st.h, st.id
	var slots map[string]schemas.TypedValue
	inputs, err := stepInputs(ctx, s.router, sd, id,
		func(p string) (*state.StepState, error) {
			for _, rec := range st.pending {
				if rec.ID == p {
					return rec, nil
				}
			}
			return s.loadRecord(ctx, sd.ID, p)
		},
		func() (map[string]schemas.TypedValue, error) {
			if st.noSlots {
				return nil, errNeedsSlots
			}
			var err error
			if slots == nil {
				slots, err = s.store.RunSlots(ctx, sd.ID)
			}
			return slots, err
		})
	step, _ := sd.Step(id)
	if err != nil {
		return "", schemas.TaskRequest{}, client.DispatchMeta{}, fmt.Errorf("step %q (%s): %w", id, step.Agent, err)
	}
	params, err := resolveParams(step.Params, sd.Spec.Vars)
	if err != nil {
		return "", schemas.TaskRequest{}, client.DispatchMeta{}, fmt.Errorf("step %q (%s): %w", id, step.Agent, err)
	}
	timeout := sd.Timeout(id)
	return step.Agent, schemas.TaskRequest{Inputs: inputs, Params: params, TimeoutMS: timeout.Milliseconds()}, client.DispatchMeta{
		TaskID: schemas.StepTaskID(sd.ID, id, 1, sd.Nonce), RunID: sd.ID, StepID: id, Deadline: h.WaveStartedAt.Add(timeout),
		TraceParent: telemetry.StepTraceParent(sd.TraceParent, sd.ID, id),
	}, nil
}

// republishWithin bounds how long after a wave started its tasks may be
// published again: well inside the tasks stream's duplicate window, so a
// task published twice is stored once.
const republishWithin = time.Minute
