package eval

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
)

const judgedSet = `
name: judged
cases:
  - name: refund
    chat: What is our refund policy?
    expect:
      judge: {rubric: "names the 30-day window after delivery", pass: 0.8}
  - name: default pass
    chat: hi
    expect: {judge: {rubric: "is polite"}}
`

// TestJudgeScoresAgainstTheRubric: the judge's request carries the rubric,
// the question and the answer and asks for a JSON verdict; a score under
// pass is a miss naming the score and the reason, one at or above it
// passes, and a verdict that is not {score 0..1, reason} is an error.
func TestJudgeScoresAgainstTheRubric(t *testing.T) {
	s, err := Parse([]byte(judgedSet))
	if err != nil {
		t.Fatal(err)
	}
	j := *s.Cases[0].Expect.Judge
	if j.Pass != 0.8 || s.Cases[1].Expect.Judge.Pass != DefaultJudgePass || !s.Judged() {
		t.Fatalf("parsed %+v", s)
	}
	srv := llmtest.New(t,
		llmtest.Answer(`{"score": 0.3, "reason": "it gives no time window"}`),
		llmtest.Answer("```json\n{\"score\": 0.9, \"reason\": \"names 30 days\"}\n```"),
		llmtest.Answer(`{"score": 7, "reason": "great"}`),
		llmtest.Answer(`I like it`),
	)
	model, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v, err := j.Score(ctx, model, "What is our refund policy?", "We refund sometimes.")
	if err != nil {
		t.Fatal(err)
	}
	if miss := j.Miss(v); miss != "the judge scored 0.30, under pass 0.80: it gives no time window" {
		t.Errorf("a low score: miss %q", miss)
	}
	req := srv.Requests()[0]
	asked := req.Body.Messages[len(req.Body.Messages)-1].Content
	for _, want := range []string{"names the 30-day window after delivery", "We refund sometimes.", "What is our refund policy?"} {
		if !strings.Contains(asked, want) {
			t.Errorf("the judge's request lacks %q:\n%s", want, asked)
		}
	}
	if raw := string(req.Raw); !strings.Contains(raw, `"json_schema"`) || !strings.Contains(raw, `"eval_verdict"`) || !strings.Contains(raw, `"score"`) {
		t.Errorf("the judge asked for no JSON verdict:\n%s", raw)
	}
	if v, err := j.Score(ctx, model, "q", "Within 30 days of delivery."); err != nil || j.Miss(v) != "" {
		t.Errorf("a high score: %+v %v", v, err)
	}
	if _, err := j.Score(ctx, model, "q", "a"); !errors.Is(err, ErrJudge) || !strings.Contains(err.Error(), "/score") {
		t.Errorf("a score of 7: %v", err)
	}
	if _, err := j.Score(ctx, model, "q", "a"); !errors.Is(err, ErrJudge) || !strings.Contains(err.Error(), "I like it") {
		t.Errorf("a verdict that is not JSON: %v", err)
	}
}
