package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// KindAgent is the kind of a step that runs one task of an agent; a step
// whose spec names no kind has it.
const KindAgent = schemas.StepKindAgent

// stepKind is how one kind of step runs. The scheduler knows steps only
// through it: waves, skips, records, events and the sweep are the same for
// every kind, so a new kind (a condition, an approval, a loop, a
// sub-pipeline) is a new file with a type implementing stepKind and one
// entry in kinds, plus its checks in Validate.
type stepKind interface {
	// start begins a step whose wave started. It returns a record when the
	// step ended at once (it could not start, or it needs no waiting);
	// otherwise the step runs until something ends it, such as an agent's
	// result or the sweep's timeout. An error with no record leaves the
	// step to the sweep, which starts it again with confirm set.
	start(ctx context.Context, s *Scheduler, st stepStart) (*state.StepState, error)
}

// kinds are the step kinds by name.
var kinds = map[string]stepKind{KindAgent: agentKind{}, KindRouter: routerKind{}, KindEvaluator: evaluatorKind{},
	schemas.StepKindApproval: humanKind{}, schemas.StepKindInput: humanKind{},
	schemas.StepKindForEach: loopKind{forEach{}}, schemas.StepKindRepeat: loopKind{repeat{}}, KindPipeline: subKind{}}

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
	if st.ahead() && gated(st.sd, step) {
		return nil, errNotAhead
	}
	if rec, err := s.gate(ctx, st, step); rec != nil || err != nil {
		return rec, err
	}
	if st.announce {
		s.emitStarted(st.sd, st.h, st.id)
	}
	return k.start(ctx, s, st)
}

// kindOf returns the kind of step (KindAgent when it names none).
func kindOf(step schemas.PipelineStep) (stepKind, error) {
	name := step.Kind
	if name == "" {
		name = KindAgent
	}
	k, ok := kinds[name]
	if !ok {
		return nil, fmt.Errorf("step %q: unknown kind %q (known: %s)", step.ID, name, strings.Join(schemas.StepKinds, ", "))
	}
	return k, nil
}
