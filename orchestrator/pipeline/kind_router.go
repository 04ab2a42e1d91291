package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

// KindRouter is the kind of a step that chooses one of its branches.
const KindRouter = pipelinespec.StepKindRouter

// Model is the language model a router asks (an *llm.Client satisfies it).
type Model interface {
	Complete(ctx context.Context, system, user string) (string, schemas.Usage, error)
}

// routerOutput is the output of a router's record that names the branch it
// chose (TEXT; empty when none): conditions read it as
// steps.<router>.outputs.branch.
const routerOutput = "branch"

// routerKind chooses a branch as the step starts and ends at once: with
// the scheduler's model, the branch the model names; otherwise, or when
// the model names none, the first branch whose rule holds, else the
// default. The chosen branch starts with the next wave; the gate skips the
// others.
type routerKind struct{ oneTask }

// validate compiles the router's rules, which read what the router reads
// (its own ancestors, itself excluded), and resolves its prompt.
func (routerKind) validate(c *checks, s pipelinespec.PipelineStep) []error {
	if s.Router == nil {
		return nil // reported by spec.Validate
	}
	var errs []error
	if _, err := resolveParams(map[string]any{"prompt": s.Router.Prompt}, c.spec.Vars); err != nil {
		errs = append(errs, fmt.Errorf("step %q: router.prompt: %w", s.ID, err))
	}
	var anc []string
	for i, b := range s.Router.Branches {
		if b.When == "" {
			continue
		}
		if anc == nil {
			anc = ancestors(c.spec, s.ID)
		}
		if _, _, err := compileCondition(b.When, c.spec.Vars, anc); err != nil {
			errs = append(errs, fmt.Errorf("step %q: router.branches[%d].when: %w", s.ID, i, err))
		}
	}
	return errs
}

func (routerKind) start(ctx context.Context, e env, st stepStart) (*state.StepState, error) {
	step, _ := st.sd.Step(st.id)
	began := time.Now()
	choice, why, usage, err := chooseBranch(withWaveBudget(ctx, st.sd, st.h, st.id), e, st.sd, step)
	now := time.Now().UTC()
	if schemas.CodeOr(err, "") == schemas.CodeBudgetExceeded {
		rec := failedRecord(st.sd, st.h, st.id, schemas.CodeBudgetExceeded, err.Error(), now)
		rec.Metrics = schemas.Metrics{DurationMS: now.Sub(began).Milliseconds(), Tokens: usage.Tokens, Cost: usage.Cost, ModelMS: usage.ModelMS}
		return rec, nil
	}
	if errors.Is(err, ErrBadCondition) {
		return failedRecord(st.sd, st.h, st.id, schemas.CodeInvalidInput, err.Error(), now), nil
	}
	if err != nil {
		return nil, err // I/O: the sweep starts it again
	}
	rec := &state.StepState{ID: st.id, Wave: waveOf(st.sd, st.id), Status: schemas.StepCompleted, Attempt: 1,
		DispatchedAt: st.h.WaveStartedAt, FinishedAt: now, Summary: why,
		Outputs: map[string]schemas.TypedValue{routerOutput: schemas.TextValue(choice, st.id)},
		Metrics: schemas.Metrics{DurationMS: now.Sub(began).Milliseconds(), Tokens: usage.Tokens, Cost: usage.Cost, ModelMS: usage.ModelMS}}
	return rec, nil
}

// routerSkipPrefix starts the skip reason of a branch its router did not
// choose (see offPath).
const routerSkipPrefix = "router "

// routerOf returns the router among step's dependencies that has it as a
// branch.
func routerOf(sd *state.RunSpec, step pipelinespec.PipelineStep) (string, bool) {
	for _, d := range step.DependsOn {
		if ds, ok := sd.Step(d); ok && ds.Router != nil && slices.Contains(ds.Router.Names(), step.ID) {
			return d, true
		}
	}
	return "", false
}

// offBranch is the skipped record of step, a branch of a router among its
// dependencies that chose another; nil when it is none or was chosen.
func offBranch(ctx context.Context, e env, st stepStart, step pipelinespec.PipelineStep) (*state.StepState, error) {
	r, ok := routerOf(st.sd, step)
	if !ok {
		return nil, nil
	}
	rec, err := e.record(ctx, st.sd.ID, r)
	if err != nil {
		return nil, err
	}
	if chosen := routerChoice(rec); chosen != step.ID {
		why := fmt.Sprintf(routerSkipPrefix+"%q chose %q", r, chosen)
		if chosen == "" {
			why = fmt.Sprintf(routerSkipPrefix+"%q chose no branch", r)
		}
		return skippedRecord(st.sd, st.h, st.id, why, time.Now().UTC()), nil
	}
	return nil, nil
}

// routerChoice is the branch a router's record chose ("" for none).
func routerChoice(rec *state.StepState) string {
	var s string
	if tv, ok := rec.Outputs[routerOutput]; ok {
		_ = json.Unmarshal(tv.Value, &s)
	}
	return s
}

// chooseBranch picks step's branch and says why.
func chooseBranch(ctx context.Context, e env, sd *state.RunSpec, step pipelinespec.PipelineStep) (choice, why string, usage schemas.Usage, err error) {
	r := step.Router
	var asked string
	if e.config().model != nil {
		reply, u, merr := askModel(ctx, e, sd, step)
		usage = u
		if schemas.CodeOr(merr, "") == schemas.CodeBudgetExceeded {
			return "", "", usage, merr // no rule is chosen for a run whose budget is spent
		}
		if merr == nil {
			for _, name := range r.Names() {
				if strings.EqualFold(reply, name) {
					return name, fmt.Sprintf("the model chose %q", name), usage, nil
				}
			}
			asked = fmt.Sprintf("the model answered %q, which is no branch; ", clip(reply, 60))
		} else {
			asked = fmt.Sprintf("the model failed (%v); ", merr)
		}
	}
	for i, b := range r.Branches {
		if b.When == "" {
			continue
		}
		ok, err := e.holds(ctx, sd, step.ID, b.When, nil)
		if err != nil {
			return "", "", usage, fmt.Errorf("router.branches[%d].when: %w", i, err)
		}
		if ok {
			return b.Step, fmt.Sprintf("%schose %q: %s holds", asked, b.Step, b.When), usage, nil
		}
	}
	if r.Default != "" {
		return r.Default, fmt.Sprintf("%schose %q: the default (no rule holds)", asked, r.Default), usage, nil
	}
	return "", asked + "chose no branch: no rule holds and there is no default", usage, nil
}

// askModel asks the model to name a branch, telling it the prompt, the
// branches and the run's variables and slots.
func askModel(ctx context.Context, e env, sd *state.RunSpec, step pipelinespec.PipelineStep) (string, schemas.Usage, error) {
	ctx, cancel := context.WithTimeout(ctx, sd.Timeout(step.ID))
	defer cancel()
	var b strings.Builder
	if step.Router.Prompt != "" {
		var unknown []string // reported at submit
		b.WriteString(resolveValue(step.Router.Prompt, sd.Spec.Vars, &unknown).(string) + "\n\n")
	}
	b.WriteString("Branches:\n")
	for _, br := range step.Router.Branches {
		fmt.Fprintf(&b, "- %s: %s\n", br.Step, br.Description)
	}
	if len(sd.Spec.Vars) > 0 {
		v, _ := json.Marshal(sd.Spec.Vars)
		fmt.Fprintf(&b, "\nVariables: %s\n", v)
	}
	if slots, err := e.slots(ctx, sd.ID); err == nil && len(slots) > 0 {
		vals := map[string]any{}
		for name, tv := range slots {
			vals[name] = jsonValue(tv)
		}
		v, _ := json.Marshal(vals)
		fmt.Fprintf(&b, "\nState: %s\n", clip(string(v), 4000))
	}
	reply, usage, err := e.config().model.Complete(ctx, "You route a workflow to one of its branches. Answer with the name of exactly one branch and nothing else.", b.String())
	return strings.Trim(strings.TrimSpace(reply), "\"'`."), usage, err
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}
