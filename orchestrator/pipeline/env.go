package pipeline

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/agentmesh/agentmesh/internal/meshcore"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// env is all a step kind may use of the scheduler: the run's facts (its
// records, slots and header, read through this replica's cache), the one
// run writer (settle, end, amend), tasks and events out, conditions, child
// runs, and the kinds' own keys in the state store (a loop's items and
// progress, a child run's records). A kind never holds the Scheduler: what
// it may do is listed here.
type env interface {
	// record is the record of step of run; state.ErrNotFound while the step
	// runs.
	record(ctx context.Context, run, step string) (*state.StepState, error)
	// slots are the run's slots.
	slots(ctx context.Context, run string) (map[string]schemas.TypedValue, error)
	// header is the run's header: this replica's copy unless fresh.
	header(ctx context.Context, run string, fresh bool) (*state.RunHeader, error)
	// inWave is the header of run sd when step id's wave is in progress
	// (see Scheduler.inWave): nil when the step has ended, ErrEarly when
	// its wave has not started.
	inWave(ctx context.Context, sd *state.RunSpec, h *state.RunHeader, id string) (*state.RunHeader, error)
	// spec is a run's spec.
	spec(ctx context.Context, run string) (*state.RunSpec, error)

	// settle makes run sd count the ends of recs (records written) and of
	// fresh (records to write): the one way a step's end reaches the header.
	settle(ctx context.Context, sd *state.RunSpec, recs, fresh []*state.StepState) error
	// end writes rec, the record of a step of sd, unless another stands,
	// and settles the one that stands, which it returns (nil when it could
	// not be written).
	end(ctx context.Context, sd *state.RunSpec, rec *state.StepState) (*state.StepState, error)
	// amend changes the run's header other than by a step's end (see
	// Scheduler.amend).
	amend(ctx context.Context, run string, fn func(*state.RunHeader) error) (*state.RunHeader, error)

	// dispatch publishes a task: confirm waits for the stream to store it.
	dispatch(ctx context.Context, agent string, task schemas.TaskRequest, meta meshcore.DispatchMeta, confirm bool) error
	// stopTasks asks agent to stop tasks; nothing answers.
	stopTasks(sd *state.RunSpec, agent string, tasks []string)
	// emitStep publishes a step's transition.
	emitStep(sd *state.RunSpec, e schemas.StepEvent)
	// holds evaluates src, a condition of step id, reading also the names
	// of extra.
	holds(ctx context.Context, sd *state.RunSpec, id, src string, extra map[string]any) (bool, error)

	// startRun validates spec and starts it as run childID, the child of
	// step parent.Step of sd, and its first wave; started (when not nil) is
	// called once the run is stored, before any of its events. A spec that
	// cannot run is a *childRefused, and nothing starts; a run with that
	// id is taken as the child, started before.
	startRun(ctx context.Context, sd *state.RunSpec, childID string, spec pipelinespec.PipelineSpec, parent state.RunParent, started func()) error
	// cancelRun cancels run id and depth more levels of its children.
	cancelRun(ctx context.Context, id, reason string, depth int) error

	// store is the state store, for a kind's own keys (a loop's items and
	// progress, a child run's header and records). A run's header is
	// written only through settle, end and amend.
	store() *state.Store
	// loops is this replica's loop engine state (cache, item batches).
	loops() *loopCache
	// config is what the scheduler was configured with that kinds read.
	config() kindConfig
}

// kindConfig is the part of the scheduler's configuration kinds read.
type kindConfig struct {
	router *route.Router
	model  Model // nil: none
	limits pipelinespec.Limits
	log    *slog.Logger
	// republish is how long a loop's progress stands still before the
	// sweep publishes its running items again.
	republish time.Duration
}

// schedEnv is the env of a Scheduler.
type schedEnv struct{ s *Scheduler }

func (e schedEnv) record(ctx context.Context, run, step string) (*state.StepState, error) {
	return e.s.loadRecord(ctx, run, step)
}

func (e schedEnv) slots(ctx context.Context, run string) (map[string]schemas.TypedValue, error) {
	return e.s.store.RunSlots(ctx, run)
}

func (e schedEnv) header(ctx context.Context, run string, fresh bool) (*state.RunHeader, error) {
	return e.s.loadHeader(ctx, run, fresh)
}

func (e schedEnv) inWave(ctx context.Context, sd *state.RunSpec, h *state.RunHeader, id string) (*state.RunHeader, error) {
	return e.s.inWave(ctx, sd, h, id)
}

func (e schedEnv) spec(ctx context.Context, run string) (*state.RunSpec, error) {
	return e.s.loadSpec(ctx, run)
}

func (e schedEnv) settle(ctx context.Context, sd *state.RunSpec, recs, fresh []*state.StepState) error {
	return e.s.settle(ctx, sd, recs, fresh)
}

func (e schedEnv) end(ctx context.Context, sd *state.RunSpec, rec *state.StepState) (*state.StepState, error) {
	stored, err := e.s.store.RecordStep(ctx, sd.ID, rec)
	if err != nil {
		return nil, err
	}
	e.s.cache.putRecord(sd.ID, stored)
	return stored, e.s.settle(ctx, sd, []*state.StepState{stored}, nil)
}

func (e schedEnv) amend(ctx context.Context, run string, fn func(*state.RunHeader) error) (*state.RunHeader, error) {
	return e.s.amend(ctx, run, fn)
}

func (e schedEnv) dispatch(ctx context.Context, agent string, task schemas.TaskRequest, meta meshcore.DispatchMeta, confirm bool) error {
	if confirm {
		_, err := e.s.dispatcher.Dispatch(ctx, agent, task, meta)
		return err
	}
	return e.s.dispatcher.Send(agent, task, meta)
}

func (e schedEnv) stopTasks(sd *state.RunSpec, agent string, tasks []string) {
	subj, err := e.s.names.Control(agent)
	if err != nil {
		return
	}
	for _, t := range tasks {
		body, _ := json.Marshal(map[string]string{"taskid": t})
		if err := e.s.nc.Publish(subj, body); err != nil {
			e.s.log.WarnContext(runContext(sd), "asking a task to stop", "task", t, "err", err)
		}
	}
}

func (e schedEnv) emitStep(sd *state.RunSpec, ev schemas.StepEvent) { e.s.emitStep(sd, ev) }

func (e schedEnv) holds(ctx context.Context, sd *state.RunSpec, id, src string, extra map[string]any) (bool, error) {
	return e.s.holds(ctx, sd, id, src, extra)
}

func (e schedEnv) startRun(ctx context.Context, sd *state.RunSpec, childID string, spec pipelinespec.PipelineSpec, parent state.RunParent, started func()) error {
	return e.s.startChild(ctx, sd, childID, spec, parent, started)
}

func (e schedEnv) cancelRun(ctx context.Context, id, reason string, depth int) error {
	return e.s.cancelRun(ctx, id, reason, depth)
}

func (e schedEnv) store() *state.Store { return e.s.store }
func (e schedEnv) loops() *loopCache   { return &e.s.loops }

func (e schedEnv) config() kindConfig {
	return kindConfig{router: e.s.router, model: e.s.cfg.Model, limits: e.s.cfg.Limits, log: e.s.log, republish: e.s.cfg.Republish}
}
