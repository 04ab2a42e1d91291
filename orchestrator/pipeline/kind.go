package pipeline

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// KindAgent is the kind of a step that runs one task of an agent; a step
// whose spec names no kind has it.
const KindAgent = pipelinespec.StepKindAgent

// stepKind is how one kind of step runs. The scheduler knows steps only
// through it: waves, skips, records, events and the sweep are the same for
// every kind, and what differs (how a step starts, which tasks are its own
// and what their results do, what its deadline ends it with, what the sweep
// looks after, what a cancel stops) is the kind's, in its own file. A kind
// reaches the scheduler only through env (env.go): it reads the run's
// facts, ends its step through the one run writer and publishes tasks and
// events, never holding the Scheduler. A new kind is a new file with a
// type implementing stepKind (embedding oneTask for what a step of one
// task does) and one entry in kinds.
type stepKind interface {
	// validate is the kind's own checks of step at submit, beyond the
	// structural ones (spec.Validate) and those of every step (Validate):
	// each problem, reported with the others.
	validate(c *checks, step pipelinespec.PipelineStep) []error
	// start begins a step whose wave started. It returns a record when the
	// step ended at once (it could not start, or it needs no waiting);
	// otherwise the step runs until something ends it, such as an agent's
	// result or the sweep's timeout. An error with no record leaves the
	// step to the sweep, which starts it again with confirm set.
	start(ctx context.Context, e env, st stepStart) (*state.StepState, error)
	// owns reports whether taskID is one of the step's tasks.
	owns(sd *state.RunSpec, id, taskID string) bool
	// result applies the result of the step's task taskID, the run's
	// header (maybe cached) being h.
	result(ctx context.Context, e env, sd *state.RunSpec, h *state.RunHeader, id, taskID string, res schemas.AgentResult) error
	// expire is the record of the running step once its deadline passed.
	expire(sd *state.RunSpec, h *state.RunHeader, id string, deadline, now time.Time) *state.StepState
	// tend is what the sweep does for the running step before its
	// deadline, once a sweep interval.
	tend(ctx context.Context, e env, sd *state.RunSpec, h *state.RunHeader, id string, now time.Time)
	// cancel stops what the step, which ended without them, started (see
	// stepCancel).
	cancel(ctx context.Context, e env, sd *state.RunSpec, id string, c stepCancel)
}

// stepCancel is what a cancel of a step stops: its agent's running tasks
// when tasks is set (its run is cancelled), and, when depth is above 0,
// the child runs it started, each with depth-1 levels of their own
// children. why says why (the step "timed out", "was cancelled").
type stepCancel struct {
	why   string
	depth int
	tasks bool
}

// childReason is the reason a child run of step id of sd is cancelled with.
func childReason(sd *state.RunSpec, id string, c stepCancel) string {
	return fmt.Sprintf("%s: the parent run %s no longer waits for it: its step %q %s", schemas.CodeCancelled, sd.ID, id, c.why)
}

// cancelChildren cancels the child runs of step id of sd (see stepCancel).
func cancelChildren(ctx context.Context, e env, sd *state.RunSpec, id string, c stepCancel, children []string) {
	if c.depth <= 0 {
		return
	}
	for _, child := range children {
		if err := e.cancelRun(ctx, child, childReason(sd, id, c), c.depth-1); err != nil {
			e.config().log.WarnContext(runContext(sd), "cancelling a child run", "step", id, "child", child, "err", err)
		}
	}
}

// oneTask is what a step that runs (at most) one task does, the default of
// every kind: its task is <run>-<step>-1 (pipelinespec.StepTaskID), its result
// is its record, its deadline fails it with code timeout, the sweep has
// nothing of its own to look after and a cancel asks its agent to stop
// the task.
type oneTask struct{}

func (oneTask) validate(*checks, pipelinespec.PipelineStep) []error { return nil }

func (oneTask) owns(sd *state.RunSpec, id, taskID string) bool {
	return taskID == pipelinespec.StepTaskID(sd.ID, id, 1, sd.Nonce)
}

func (oneTask) result(ctx context.Context, e env, sd *state.RunSpec, h *state.RunHeader, id, taskID string, res schemas.AgentResult) error {
	h, err := e.inWave(ctx, sd, h, id)
	if err != nil || h == nil {
		return err
	}
	return e.settle(ctx, sd, nil, []*state.StepState{resultRecord(sd, h, id, taskID, res, time.Now().UTC())})
}

func (oneTask) expire(sd *state.RunSpec, h *state.RunHeader, id string, deadline, now time.Time) *state.StepState {
	msg := fmt.Sprintf("%s: no result by the deadline %s (timeout %s)", schemas.CodeTimeout,
		deadline.UTC().Format(time.RFC3339), sd.Timeout(id))
	return failedRecord(sd, h, id, schemas.CodeTimeout, msg, now)
}

func (oneTask) tend(context.Context, env, *state.RunSpec, *state.RunHeader, string, time.Time) {}

func (oneTask) cancel(_ context.Context, e env, sd *state.RunSpec, id string, c stepCancel) {
	if step, _ := sd.Step(id); c.tasks && step.Agent != "" {
		e.stopTasks(sd, step.Agent, []string{pipelinespec.StepTaskID(sd.ID, id, 1, sd.Nonce)})
	}
}

// kinds are the step kinds by name.
var kinds = map[string]stepKind{KindAgent: agentKind{}, KindRouter: routerKind{}, KindEvaluator: evaluatorKind{},
	pipelinespec.StepKindApproval: humanKind{}, pipelinespec.StepKindInput: humanKind{},
	pipelinespec.StepKindForEach: loopKind{d: forEach{}}, pipelinespec.StepKindRepeat: loopKind{d: repeat{}}, KindPipeline: subKind{}}

// stepStart is one start of a step.
type stepStart struct {
	sd *state.RunSpec
	h  *state.RunHeader // the header that started the step's wave
	id string
	// pending are records being written along with h: a parent's record
	// among them is read from here. Set only when the step starts ahead of
	// h's write (see dispatchAhead).
	pending []*state.StepState
	// noSlots forbids reading the run's slots (errNeedsSlots): the outputs
	// of pending are not routed into them yet.
	noSlots bool
	confirm bool // wait for the stream to confirm what is published (the sweep)
	// announce emits the step's started event once its gate lets it start.
	announce bool
}

func (st stepStart) ahead() bool { return st.pending != nil }

// start starts a step with its kind.
func (s *Scheduler) start(ctx context.Context, st stepStart) (*state.StepState, error) {
	step, _ := st.sd.Step(st.id)
	k, err := kindOf(step)
	if err != nil {
		return failedRecord(st.sd, st.h, st.id, schemas.CodeInvalidPipeline, err.Error(), st.h.WaveStartedAt), err
	}
	if st.sd.Keeps(st.id) {
		// A fork's kept step: the original's record, no task. Not ahead
		// of the header: the caller would take it for a task sent.
		if st.ahead() {
			return nil, errNotAhead
		}
		return s.keptRecord(ctx, st)
	}
	if st.ahead() && gated(st.sd, step) {
		return nil, errNotAhead
	}
	if rec, err := s.gate(ctx, st, step); rec != nil || err != nil {
		return rec, err
	}
	if st.announce {
		s.emitStarted(st.sd, st.h, st.id)
	}
	return k.start(ctx, schedEnv{s}, st)
}

// kindOf returns the kind of step (KindAgent when it names none).
func kindOf(step pipelinespec.PipelineStep) (stepKind, error) {
	name := step.Kind
	if name == "" {
		name = KindAgent
	}
	k, ok := kinds[name]
	if !ok {
		return nil, fmt.Errorf("step %q: unknown kind %q (known: %s)", step.ID, name, strings.Join(pipelinespec.StepKinds, ", "))
	}
	return k, nil
}
