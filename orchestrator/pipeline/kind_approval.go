package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// humanKind runs a step of kind approval or input: it waits for a person.
// Its wave's header lists it under Waiting (see markWaiting) and a
// step.waiting event says what for; it ends when a resolution arrives on
// mesh.pipeline.resolve (Resolve, on any replica) or, at its deadline, with
// its default (the sweep, through expire). Both write the step's record
// with create, so the first of them decides.
type humanKind struct{ oneTask }

// expire: nobody answered in time, the step takes its default.
func (humanKind) expire(sd *state.RunSpec, h *state.RunHeader, id string, _, now time.Time) *state.StepState {
	step, _ := sd.Step(id)
	return defaultRecord(sd, h, step, now)
}

// cancel: a person answers, no agent runs a task.
func (humanKind) cancel(context.Context, env, *state.RunSpec, string, stepCancel) {}

// start says the step waits. Never ahead of the header that starts its
// wave (see dispatchAhead): a person told it waits must find it waiting.
func (humanKind) start(_ context.Context, e env, st stepStart) (*state.StepState, error) {
	if st.ahead() {
		return nil, errWaitsForHeader
	}
	step, _ := st.sd.Step(st.id)
	e.emitStep(st.sd, schemas.StepEvent{RunID: st.h.ID, Step: st.id, Status: schemas.StepWaiting, Wave: st.h.Wave,
		Attempt: 1, TaskID: pipelinespec.StepTaskID(st.h.ID, st.id, 1, st.sd.Nonce), Reason: waitingFor(step), At: st.h.WaveStartedAt})
	return nil, nil
}

// errWaitsForHeader refuses to start a human step ahead of its header.
var errWaitsForHeader = errors.New("a step that waits for a person starts with its wave's header")

// waitingFor says what a human step waits for: "approval: <prompt>" or
// "input (TEXT): <prompt>".
func waitingFor(step pipelinespec.PipelineStep) string {
	if step.Kind == pipelinespec.StepKindInput {
		return fmt.Sprintf("input (%s): %s", step.Human.InputType(), step.Human.Prompt)
	}
	return "approval: " + step.Human.Prompt
}

// markWaiting lists step id in the header's Waiting when it waits for a
// person; unmarkWaiting takes it out when it ends.
func markWaiting(h *state.RunHeader, sd *state.RunSpec, id string) {
	step, _ := sd.Step(id)
	if !pipelinespec.IsHumanKind(step.Kind) || step.Human == nil {
		return
	}
	if h.Waiting == nil {
		h.Waiting = map[string]string{}
	}
	h.Waiting[id] = waitingFor(step)
}

func unmarkWaiting(h *state.RunHeader, id string) {
	delete(h.Waiting, id)
	if len(h.Waiting) == 0 {
		h.Waiting = nil
	}
}

// stepContract is the contract a step's outputs are read and routed with:
// its agent's, or for an input step one output "value" of its data type.
func stepContract(contracts map[string]schemas.AgentContract, step pipelinespec.PipelineStep) (schemas.AgentContract, bool) {
	if step.Kind == pipelinespec.StepKindInput {
		var hint string
		if step.Human != nil { // nil in a spec that fails validation
			hint = step.Human.ContentTypeHint
		}
		return schemas.AgentContract{Name: step.ID, Outputs: []schemas.TypedOutput{{Name: pipelinespec.HumanOutput,
			DataType: step.Human.InputType(), ContentTypeHint: hint}}}, true
	}
	c, ok := contracts[step.Agent]
	return c, ok
}

// validate checks what the structural checks cannot: an input step's
// data type is registered and its default is a value of it.
func (humanKind) validate(c *checks, s pipelinespec.PipelineStep) []error {
	if s.Kind != pipelinespec.StepKindInput || s.Human == nil || s.Human.Default == nil {
		return nil
	}
	if _, err := inputValue(c.router.DataTypes(), s, s.Human.Default, "default"); err != nil {
		return []error{fmt.Errorf("step %q: human.default: %w", s.ID, err)}
	}
	return nil
}

// inputValue is v as an input step's typed value, checked against the
// step's data type.
func inputValue(reg *schemas.DataTypeRegistry, step pipelinespec.PipelineStep, v any, source string) (schemas.TypedValue, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return schemas.TypedValue{}, fmt.Errorf("%w: the value cannot be encoded as JSON: %v", schemas.ErrInvalidValue, err)
	}
	tv := schemas.TypedValue{DataType: step.Human.InputType(), ContentTypeHint: step.Human.ContentTypeHint, Value: raw, Source: source}
	if err := reg.Validate(tv.DataType, tv.Value); err != nil {
		return schemas.TypedValue{}, fmt.Errorf("%w; give a value of data type %s", err, tv.DataType)
	}
	return tv, nil
}

// humanRecord is the record of a human step ended by an answer (by whom,
// with comment) or its default: approved, it completed; rejected, it failed
// with code rejected; an input completed with its value as output "value".
func humanRecord(sd *state.RunSpec, h *state.RunHeader, step pipelinespec.PipelineStep, decision string, value *schemas.TypedValue, by, comment string, now time.Time) *state.StepState {
	rec := &state.StepState{ID: step.ID, Wave: waveOf(sd, step.ID), Status: schemas.StepCompleted, Attempt: 1,
		TaskID: pipelinespec.StepTaskID(h.ID, step.ID, 1, sd.Nonce), DispatchedAt: h.WaveStartedAt, Deadline: h.WaveStartedAt.Add(sd.Timeout(step.ID)),
		FinishedAt: now}
	what := "approved"
	switch {
	case value != nil:
		what = "answered"
		v := *value
		v.ProducedAt = now
		rec.Outputs = map[string]schemas.TypedValue{pipelinespec.HumanOutput: v}
	case decision == pipelinespec.DecisionReject:
		what = "rejected"
	}
	msg := what + " by " + by
	if comment != "" {
		msg += ": " + comment
	}
	if what == "rejected" {
		rec.Status, rec.Code, rec.Error = schemas.StepFailed, schemas.CodeRejected, msg
	} else {
		rec.Summary = msg
	}
	return rec
}

// defaultRecord is the record of a human step nobody answered in time: an
// approval takes its default decision (reject when it names none), an
// input its default value, or fails with code timeout when it has none.
func defaultRecord(sd *state.RunSpec, h *state.RunHeader, step pipelinespec.PipelineStep, now time.Time) *state.StepState {
	by := fmt.Sprintf("default (no answer within %s)", sd.Timeout(step.ID))
	if step.Kind == pipelinespec.StepKindApproval {
		d, _ := step.Human.Default.(string)
		if d == "" {
			d = pipelinespec.DecisionReject
		}
		return humanRecord(sd, h, step, d, nil, by, "", now)
	}
	if step.Human.Default == nil {
		return failedRecord(sd, h, step.ID, schemas.CodeTimeout,
			fmt.Sprintf("%s: nobody answered input step %q within %s and it has no default", schemas.CodeTimeout, step.ID, sd.Timeout(step.ID)), now)
	}
	raw, _ := json.Marshal(step.Human.Default) // checked at submit
	v := schemas.TypedValue{DataType: step.Human.InputType(), ContentTypeHint: step.Human.ContentTypeHint, Value: raw, Source: "default"}
	return humanRecord(sd, h, step, "", &v, by, "", now)
}

// refusal is a resolution that changes nothing, with its code.
type refusal struct {
	code string
	err  error
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

func refuse(code, format string, args ...any) error {
	return &refusal{code: code, err: fmt.Errorf(format, args...)}
}

// ErrNotWaiting is a resolution for a run or step that does not wait for
// a person.
var ErrNotWaiting = errors.New("not waiting")

// ErrNotOwner is a request from a client about a run another client (or
// no client) submitted.
var ErrNotOwner = errors.New("not the owner")

// Resolve applies a person's answer (io.agentmesh.pipeline.resolve.requested)
// to an approval or input step that waits: the step ends as the answer
// says and the run goes on, on whichever replica takes the request. An
// answer that cannot apply (the run or step does not exist or does not
// wait, the decision or value does not fit the step) changes nothing and
// is refused with io.agentmesh.pipeline.resolve.refused on
// mesh.events.<run>.pipeline; when neither the run id nor the event id
// can be a subject token the error wraps bus.ErrNoReplySubject. Other
// errors (KV trouble) mean: try again.
func (s *Scheduler) Resolve(ctx context.Context, ev bus.Event) error {
	var r pipelinespec.Resolution
	err := bus.DecodeData(ev, &r, func(b []byte) error { return schemas.ValidateJSON(schemas.SchemaResolve, b) })
	if err != nil {
		err = &refusal{code: schemas.CodeMalformedEvent, err: err}
	} else {
		// The record's end time is the request's, so a redelivered request
		// writes the same record and is known as the same answer.
		at := ev.Time.UTC()
		if at.IsZero() {
			at = time.Now().UTC()
		}
		err = resolve(ctx, schedEnv{s}, r, at)
	}
	var ref *refusal
	if !errors.As(err, &ref) {
		return err
	}
	return s.refuseResolve(ctx, ev.ID, r, ref.code, ref.err)
}

// RefuseResolve refuses a resolve request that could not be read (ev may
// be partly decoded): see Resolve. The refusal goes on the subjects of
// the requester in ctx (bus.Requester).
func (s *Scheduler) RefuseResolve(ctx context.Context, ev bus.Event, code string, cause error) error {
	var r pipelinespec.Resolution
	_ = ev.DataAs(&r)
	if bus.ValidateToken("run id", r.RunID) != nil {
		r.RunID = ev.Ext(bus.ExtRunID)
	}
	return s.refuseResolve(ctx, ev.ID, r, code, cause)
}

// refuseResolve publishes the refusal on mesh.events.<run>.pipeline.<c>
// for the requester c, who alone waits for it (the run may be another's).
func (s *Scheduler) refuseResolve(ctx context.Context, id string, r pipelinespec.Resolution, code string, cause error) error {
	to := bus.ReplyToken(r.RunID, id)
	if to == "" {
		return fmt.Errorf("%w: %w", bus.ErrNoReplySubject, cause)
	}
	s.emit(s.names.ForClient(bus.Requester(ctx)).Events(to, "pipeline"), bus.TypeResolveRefused,
		pipelinespec.ResolveRefusal{RunID: to, Step: r.Step, Request: id, Code: code, Error: cause.Error(), At: time.Now().UTC()},
		func(e *bus.Event) { e.SetExt(bus.ExtRunID, to) })
	return nil
}

// resolve checks r against the run and writes the step's record; see Resolve.
func resolve(ctx context.Context, e env, r pipelinespec.Resolution, at time.Time) error {
	sd, err := e.spec(ctx, r.RunID)
	if errors.Is(err, state.ErrNotFound) {
		return refuse(schemas.CodeNotWaiting, "%w: there is no run %q; check the id with agentmesh runs", ErrNotWaiting, r.RunID)
	}
	if err != nil {
		return err
	}
	if c := bus.Requester(ctx); c != "" && c != sd.Owner {
		return refuse(schemas.CodeForbidden, "%w: run %s was not submitted by client %s: only the client that submitted a run (or admin) may answer its steps",
			ErrNotOwner, r.RunID, c)
	}
	step, ok := sd.Step(r.Step)
	if ok && isAgentStep(step) {
		return resolveAgent(ctx, e, sd, step, r, at)
	}
	if !ok || !pipelinespec.IsHumanKind(step.Kind) {
		return refuse(schemas.CodeNotWaiting, "%w: run %s has no approval or input step %q; agentmesh state show %s lists its steps", ErrNotWaiting, r.RunID, r.Step, r.RunID)
	}
	var value *schemas.TypedValue
	switch {
	case step.Kind == pipelinespec.StepKindApproval && (r.Decision == "" || r.Value != nil):
		return refuse(schemas.CodeInvalidInput, "step %q of run %s is an approval: answer it with a decision (approve or reject) and no value", r.Step, r.RunID)
	case step.Kind == pipelinespec.StepKindInput && (r.Value == nil || r.Decision != ""):
		return refuse(schemas.CodeInvalidInput, "step %q of run %s is an input: answer it with a value of data type %s and no decision", r.Step, r.RunID, step.Human.InputType())
	case step.Kind == pipelinespec.StepKindInput:
		v, err := inputValue(e.config().router.DataTypes(), step, r.Value, "input")
		if err != nil {
			return refuse(schemas.CodeInvalidInput, "step %q of run %s: %v", r.Step, r.RunID, err)
		}
		value = &v
	}
	h, err := e.header(ctx, r.RunID, true)
	if err != nil {
		return err
	}
	if !h.Running(sd, r.Step) {
		return refuse(schemas.CodeNotWaiting, "%w: step %q of run %s does not wait for a person: %s", ErrNotWaiting, r.Step, r.RunID, notWaitingWhy(ctx, e, sd, h, r.Step))
	}
	by := r.By
	if by == "" {
		by = "someone"
	}
	rec := humanRecord(sd, h, step, r.Decision, value, by, r.Comment, at)
	if r.Cancel && rec.Code == schemas.CodeRejected {
		// A cancel of the run: the run ends cancelled, not failed.
		rec.Code, rec.Error = schemas.CodeCancelled, schemas.CodeCancelled+": "+rec.Error
	}
	return recordResolution(ctx, e, sd, r, rec)
}

// recordResolution writes the record of a step a person ended and settles
// it; when another outcome came first it is refused.
func recordResolution(ctx context.Context, e env, sd *state.RunSpec, r pipelinespec.Resolution, rec *state.StepState) error {
	// The sweep's default, or another answer, may have come first: the
	// record that stands is settled in case its writer died before telling
	// the header, and this answer refused.
	stored, err := e.end(ctx, sd, rec)
	if stored == nil {
		return err
	}
	if !stored.FinishedAt.Equal(rec.FinishedAt) || stored.Status != rec.Status || stored.Summary != rec.Summary {
		return refuse(schemas.CodeNotWaiting, "%w: step %q of run %s ended already (%s %s)", ErrNotWaiting, r.Step, r.RunID, stored.Status, stored.Summary+stored.Error)
	}
	return err
}

// notWaitingWhy says why step id, known to the run, does not wait.
func notWaitingWhy(ctx context.Context, e env, sd *state.RunSpec, h *state.RunHeader, id string) string {
	switch {
	case h.Done():
		return "the run has ended (" + h.Status + ")"
	case h.LegacySkipped[id] != "":
		return "it was skipped: " + h.LegacySkipped[id]
	case waveOf(sd, id) > h.Wave:
		return fmt.Sprintf("it has not started (it runs in wave %d, the run is in wave %d)", waveOf(sd, id), h.Wave)
	}
	if rec, err := e.record(ctx, sd.ID, id); err == nil && rec.Status == schemas.StepSkipped {
		return "it was skipped: " + rec.Reason
	}
	return "it has ended"
}
