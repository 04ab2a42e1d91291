package prompt_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/llmiface"
	"github.com/agentmesh/agentmesh/agents/builtin/prompt"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/schemas"
)

const sorterYAML = `
name: Sorter
description: Sorts files into categories.
capability: ANALYSIS
system_prompt: Put each file in a category.
inputs: [{name: note, data_type: TEXT}]
outputs:
  - {name: groups, data_type: CATEGORIZATION, description: the files by category}
  - {name: reason, data_type: TEXT}
`

func structuredAgent(t *testing.T, yaml string, cfg llm.Config) *prompt.Agent {
	t.Helper()
	pc, err := prompt.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := prompt.New(pc, c)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A structured answer that fails its schema is shown to the model with
// what was wrong; the second answer is checked and stored.
func TestStructuredOutputsRetryABadAnswer(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Answer(`{"groups": {"categories": "sunsets"}, "reason": "sky"}`),
		llmtest.Answer("```json\n{\"groups\": {\"categories\": {\"sunsets\": [\"f-1\", \"f-2\"]}}, \"reason\": \"warm skies\"}\n```"),
	)
	a := structuredAgent(t, sorterYAML, srv.Config())
	ec := schemas.NewExecutionContext(nil)
	_ = ec.Put("note", schemas.TextValue("two photos", "test"))
	res, err := a.Execute(context.Background(), ec)
	if err != nil || !res.Success {
		t.Fatalf("%+v, %v", res, err)
	}
	var cat schemas.Categorization
	if err := res.Outputs["groups"].Decode(&cat); err != nil || len(cat.Categories["sunsets"]) != 2 {
		t.Errorf("groups %s: %v", res.Outputs["groups"].Value, err)
	}
	if text, _ := res.Outputs["reason"].Text(); text != "warm skies" || res.Outputs["groups"].DataType != schemas.TypeCategorization {
		t.Errorf("outputs %+v", res.Outputs)
	}
	if res.Metrics.Tokens.Completion != 40 {
		t.Errorf("usage of both calls not counted: %+v", res.Metrics)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	rf := reqs[0].Body.ResponseFormat
	if rf == nil || rf.JSONSchema == nil {
		t.Fatalf("no response_format json_schema in %s", reqs[0].Raw)
	}
	schema, _ := json.Marshal(rf.JSONSchema.Schema)
	for _, want := range []string{`"groups"`, `"reason"`, `"required":["groups","reason"]`, `"the files by category"`, `"categories"`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("output schema lacks %s: %s", want, schema)
		}
	}
	users := reqs[1].MessagesOf("user")
	last := users[len(users)-1].Content
	if !strings.Contains(last, "Your answer was refused") || !strings.Contains(last, `CATEGORIZATION value "groups"`) || !strings.Contains(last, "/categories") {
		t.Errorf("the retry does not say what was wrong: %s", last)
	}
}

// Two answers that fail their schemas end the task invalid_output, and
// no value of them is returned.
func TestStructuredOutputsRefuseABadAnswerTwice(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Answer(`not json at all`),
		llmtest.Answer(`{"groups": {"categories": {"sunsets": [""]}}, "reason": 3, "extra": 1}`),
	)
	a := structuredAgent(t, sorterYAML, srv.Config())
	res, err := a.Execute(context.Background(), schemas.NewExecutionContext(nil))
	if err != nil || res.Success || res.Error == nil || res.Error.Code != schemas.CodeInvalidOutput {
		t.Fatalf("%+v, %v", res, err)
	}
	if len(res.Outputs) != 0 {
		t.Errorf("a refused answer's values were returned: %+v", res.Outputs)
	}
	for _, want := range []string{"failed the declared outputs 2 times", `TEXT value "reason"`, `member "extra" is not a declared output`, "nothing was stored"} {
		if !strings.Contains(res.Error.Message, want) {
			t.Errorf("error lacks %q: %s", want, res.Error.Message)
		}
	}
	if !strings.Contains(srv.Requests()[1].MessagesOf("user")[1].Content, "not a JSON object") {
		t.Errorf("retry message: %s", srv.Requests()[1].MessagesOf("user")[1].Content)
	}
}

// On Anthropic the output schema goes as output_config's format.
func TestStructuredOutputsAnthropic(t *testing.T) {
	srv := llmtest.NewAnthropic(t, llmtest.Answer(`{"groups": {"categories": {"dusk": ["f-9"]}}, "reason": "r"}`))
	a := structuredAgent(t, sorterYAML, srv.Config())
	ec := schemas.NewExecutionContext(nil)
	_ = ec.Put("note", schemas.TextValue("one photo", "test"))
	res, err := a.Execute(context.Background(), ec)
	if err != nil || !res.Success {
		t.Fatalf("%+v, %v", res, err)
	}
	oc := srv.Requests()[0].Body.OutputConfig
	if oc == nil || !strings.Contains(string(oc.Format.Schema), `"groups"`) {
		t.Errorf("no output_config schema in %s", srv.Requests()[0].Raw)
	}
}

// A text model takes no output schema: the schema is in the system prompt,
// and a refused answer goes back to it with the conversation so far, in
// one message; the second answer is checked and stored.
func TestStructuredOutputsOfATextModelRestOnTheRetry(t *testing.T) {
	cfg, err := prompt.Parse([]byte(sorterYAML))
	if err != nil {
		t.Fatal(err)
	}
	var systems, users []string
	model := llmiface.TextModelFunc(func(_ context.Context, system, user string) (string, schemas.Usage, error) {
		systems, users = append(systems, system), append(users, user)
		if len(users) == 1 {
			return `{"groups": [], "reason": "none"}`, schemas.Usage{}, nil
		}
		return `{"groups": {"categories": {}}, "reason": "none"}`, schemas.Usage{}, nil
	})
	a, _ := prompt.New(cfg, model)
	ec := schemas.NewExecutionContext(nil)
	_ = ec.Put("note", schemas.TextValue("nothing today", "test"))
	res, err := a.Execute(context.Background(), ec)
	if err != nil || !res.Success || len(users) != 2 {
		t.Fatalf("%+v, %v, %d calls", res, err, len(users))
	}
	if !strings.Contains(systems[0], `"required":["groups","reason"]`) {
		t.Errorf("the system prompt lacks the schema: %s", systems[0])
	}
	for _, want := range []string{"## user\n## Input note (TEXT)\nnothing today", "## assistant\n{\"groups\": []", "## user\nYour answer was refused"} {
		if !strings.Contains(users[1], want) {
			t.Errorf("the retry lacks %q:\n%s", want, users[1])
		}
	}
}
