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

// KindEvaluator is the kind of a step that scores an earlier output.
const KindEvaluator = pipelinespec.StepKindEvaluator

// evaluatorOutput is the output of an evaluator's record: an EVALUATION,
// read by conditions as steps.<id>.outputs.evaluation.score.
const evaluatorOutput = "evaluation"

// ErrNoModel is an evaluator step on an orchestrator that has no model.
var ErrNoModel = errors.New("no model")

// evaluatorKind asks the scheduler's model to score the value at
// evaluate.output against evaluate.criteria, and ends at once with the
// EVALUATION {score, reasoning} as its output.
type evaluatorKind struct{ oneTask }

// needsModel refuses spec, submitted to an orchestrator with no model,
// when a step of it is an evaluator.
func needsModel(spec pipelinespec.PipelineSpec) error {
	for _, st := range spec.Steps {
		if st.Kind == KindEvaluator {
			return fmt.Errorf("%w %q: step %q: %w: an evaluator needs an LLM; configure one on the orchestrator (OPENAI_API_KEY or OPENAI_BASE_URL)",
				ErrInvalidPipeline, spec.Name, st.ID, ErrNoModel)
		}
	}
	return nil
}

func (evaluatorKind) validate(c *checks, step pipelinespec.PipelineStep) []error {
	if err := checkEvaluate(c.spec, step); err != nil {
		return []error{err}
	}
	return nil
}

func (evaluatorKind) start(ctx context.Context, e env, st stepStart) (*state.StepState, error) {
	step, _ := st.sd.Step(st.id)
	began := time.Now()
	fail := func(code, msg string) (*state.StepState, error) {
		return failedRecord(st.sd, st.h, st.id, code, msg, time.Now().UTC()), nil
	}
	model := e.config().model
	if model == nil {
		return fail(schemas.CodeUnavailable, ErrNoModel.Error()+": an evaluator needs an LLM; configure one on the orchestrator (OPENAI_API_KEY or OPENAI_BASE_URL)")
	}
	v, err := sourceValue(ctx, e, st.sd, step.Evaluate.Output)
	if errors.Is(err, state.ErrNotFound) {
		return fail(schemas.CodeNotFound, fmt.Sprintf("evaluate.output %s: no such value in the run", step.Evaluate.Output))
	}
	if err != nil {
		return nil, err
	}
	mctx, cancel := context.WithTimeout(withWaveBudget(ctx, st.sd, st.h, st.id), st.sd.Timeout(st.id))
	defer cancel()
	reply, usage, err := model.Complete(mctx,
		`You evaluate an output against criteria. Answer with JSON only: {"score": a number from 0 (fails the criteria) to 1 (meets them fully), "reasoning": "one or two sentences"}.`,
		fmt.Sprintf("Criteria: %s\n\nOutput (%s):\n%s", step.Evaluate.Criteria, v.DataType, clip(valueText(v), 8000)))
	metrics := schemas.Metrics{DurationMS: time.Since(began).Milliseconds(), Tokens: usage.Tokens, Cost: usage.Cost, ModelMS: usage.ModelMS}
	if schemas.CodeOr(err, "") == schemas.CodeBudgetExceeded {
		rec, _ := fail(schemas.CodeBudgetExceeded, err.Error()) // the call was not made
		rec.Metrics = metrics
		return rec, nil
	}
	if err != nil {
		rec, _ := fail(schemas.CodeAgentError, fmt.Sprintf("the model failed: %v", err))
		rec.Metrics = metrics
		return rec, nil
	}
	ev, err := parseEvaluation(reply)
	if err != nil {
		rec, _ := fail(schemas.CodeMalformedResult, err.Error())
		rec.Metrics = metrics
		return rec, nil
	}
	ev.Criteria = step.Evaluate.Criteria
	tv, err := schemas.NewValue(schemas.TypeEvaluation, ev, st.id)
	if err != nil {
		return nil, err
	}
	return &state.StepState{ID: st.id, Wave: waveOf(st.sd, st.id), Status: schemas.StepCompleted, Attempt: 1,
		DispatchedAt: st.h.WaveStartedAt, FinishedAt: time.Now().UTC(), Summary: fmt.Sprintf("score %.2f: %s", ev.Score, ev.Reasoning),
		Outputs: map[string]schemas.TypedValue{evaluatorOutput: tv}, Metrics: metrics}, nil
}

// parseEvaluation reads the model's JSON answer (fenced or not).
func parseEvaluation(reply string) (schemas.Evaluation, error) {
	var e schemas.Evaluation
	i, j := strings.Index(reply, "{"), strings.LastIndex(reply, "}")
	if i < 0 || j < i {
		return e, fmt.Errorf("the model's answer %q holds no JSON object with score and reasoning", clip(reply, 80))
	}
	var raw struct {
		Score     *float64 `json:"score"`
		Reasoning string   `json:"reasoning"`
	}
	if err := json.Unmarshal([]byte(reply[i:j+1]), &raw); err != nil || raw.Score == nil {
		return e, fmt.Errorf("the model's answer %q is not {\"score\": 0..1, \"reasoning\": ...}", clip(reply, 80))
	}
	if *raw.Score < 0 || *raw.Score > 1 {
		return e, fmt.Errorf("the model's score %v is outside 0 to 1", *raw.Score)
	}
	return schemas.Evaluation{Score: *raw.Score, Reasoning: raw.Reasoning}, nil
}

// valueText is a value as the model reads it: TEXT as it is, others as JSON.
func valueText(v schemas.TypedValue) string {
	if s, ok := jsonValue(v).(string); ok && v.DataType == schemas.TypeText {
		return s
	}
	return string(v.Value)
}

// sourceValue reads the value at src: "<step>.<output>" (a record),
// "state.<slot>" or "seed.<name>"; state.ErrNotFound when there is none.
func sourceValue(ctx context.Context, e env, sd *state.RunSpec, src string) (schemas.TypedValue, error) {
	head, tail, _ := strings.Cut(src, ".")
	switch head {
	case "seed":
		sv, ok := sd.Spec.Seed.Values[tail]
		if !ok {
			return schemas.TypedValue{}, state.ErrNotFound
		}
		return sv.Typed("seed")
	case "state":
		slots, err := e.slots(ctx, sd.ID)
		if err != nil {
			return schemas.TypedValue{}, err
		}
		v, ok := slots[tail]
		if !ok {
			return schemas.TypedValue{}, state.ErrNotFound
		}
		return v, nil
	}
	rec, err := e.record(ctx, sd.ID, head)
	if err != nil {
		return schemas.TypedValue{}, err
	}
	v, ok := rec.Outputs[tail]
	if !ok {
		return schemas.TypedValue{}, state.ErrNotFound
	}
	return v, nil
}

// checkEvaluate checks an evaluator's source at submit: a seed value, a
// slot, or an output of a step that runs before it.
func checkEvaluate(spec pipelinespec.PipelineSpec, step pipelinespec.PipelineStep) error {
	if step.Evaluate == nil || step.Evaluate.Output == "" {
		return nil // reported by spec.Validate
	}
	src := step.Evaluate.Output
	head, tail, ok := strings.Cut(src, ".")
	switch {
	case !ok || head == "" || tail == "":
		return fmt.Errorf("step %q: evaluate.output %q: use <step>.<output>, state.<slot> or seed.<name>", step.ID, src)
	case head == "state":
		return nil
	case head == "seed":
		if _, ok := spec.Seed.Values[tail]; !ok {
			return fmt.Errorf("step %q: evaluate.output %s: the seed has no value %q", step.ID, src, tail)
		}
		return nil
	}
	if anc := ancestors(spec, step.ID); !slices.Contains(anc, head) {
		return fmt.Errorf("step %q: evaluate.output %s: step %q does not run before it (its ancestors: %s); add it to depends_on", step.ID, src, head, orNone(anc))
	}
	return nil
}
