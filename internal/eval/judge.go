package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
)

// DefaultJudgePass is the score a judged answer needs when the set gives
// no pass.
const DefaultJudgePass = 0.7

// ErrJudge reports a judge that gave no usable score.
var ErrJudge = errors.New("eval judge")

// Judge asks a model to score the answer against Rubric, from 0 (misses
// it entirely) to 1 (meets it fully); the answer passes with a score of
// at least Pass.
type Judge struct {
	Rubric string  `yaml:"rubric"`
	Pass   float64 `yaml:"pass"`
}

// ChatModel is the model a judge asks: an *llm.Client.
type ChatModel interface {
	Chat(ctx context.Context, req llm.Request) (llm.Response, llm.Usage, error)
}

// Verdict is a judge's score of an answer and why.
type Verdict struct {
	Score  float64 `json:"score"`
	Reason string  `json:"reason"`
}

// verdictSchema is the structured output the judge asks for.
var verdictSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["score","reason"],` +
	`"properties":{"score":{"type":"number","minimum":0,"maximum":1},"reason":{"type":"string"}}}`)

const judgeSystem = `You grade the answer of an AI agent against a rubric. Read the request, the rubric and the answer; give a score from 0 (the answer misses the rubric entirely) to 1 (it meets every point of it), and a one-sentence reason. Reply with JSON only: {"score": 0.0 to 1.0, "reason": "..."}.`

// Score asks model to grade answer (to request) against j's rubric.
func (j Judge) Score(ctx context.Context, model ChatModel, request, answer string) (Verdict, error) {
	var v Verdict
	user := fmt.Sprintf("Request:\n%s\n\nRubric:\n%s\n\nAnswer:\n%s", request, j.Rubric, answer)
	resp, _, err := model.Chat(ctx, llm.Request{
		Messages: []llm.Message{{Role: "system", Content: judgeSystem}, {Role: "user", Content: user}},
		Output:   &llm.OutputSchema{Name: "eval_verdict", Schema: verdictSchema},
	})
	if err != nil {
		return v, fmt.Errorf("%w: the model: %w", ErrJudge, err)
	}
	out := unfence(resp.Message.Content)
	sch, err := schemas.CompileSchema("eval/verdict", verdictSchema)
	if err != nil {
		return v, err
	}
	if probs := sch.Check([]byte(out)); len(probs) > 0 {
		parts := make([]string, len(probs))
		for i, p := range probs {
			parts[i] = p.String()
		}
		return v, fmt.Errorf("%w: the model's verdict %s is not {score: 0..1, reason}: %s", ErrJudge, schemas.Clip(out, 200), strings.Join(parts, "; "))
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return v, fmt.Errorf("%w: the model's verdict %s: %v", ErrJudge, schemas.Clip(out, 200), err)
	}
	return v, nil
}

// Miss says why v fails j ("" when it passes).
func (j Judge) Miss(v Verdict) string {
	if v.Score >= j.Pass {
		return ""
	}
	return fmt.Sprintf("the judge scored %.2f, under pass %.2f: %s", v.Score, j.Pass, schemas.Clip(v.Reason, 300))
}

// Judged reports whether a case of the set has a judge.
func (s Set) Judged() bool {
	for _, c := range s.Cases {
		if c.Expect.Judge != nil {
			return true
		}
	}
	return false
}
