package prompt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/schemas"
)

// outputAttempts is how many answers a task asks of its model for
// structured outputs: the first, and one more after being told what was
// wrong with it.
const outputAttempts = 2

// Structured reports whether the agent answers in JSON: it declares outputs
// other than a single TEXT one. Each output is then a member of one JSON
// object whose schema is built from the outputs' data types.
func (c Config) Structured() bool {
	return len(c.Outputs) != 1 || c.Outputs[0].DataType != schemas.TypeText
}

// outputSchema is the JSON Schema of a structured answer: an object with
// one required member per output, each its data type's schema with the
// output's description.
func (a *Agent) outputSchema() (*llm.OutputSchema, error) {
	props := map[string]any{}
	required := make([]string, 0, len(a.cfg.Outputs))
	for _, out := range a.cfg.Outputs {
		t, ok := a.types.Type(out.DataType)
		if !ok {
			return nil, fmt.Errorf("output %q: unknown data type %q (known: %s)", out.Name, out.DataType, strings.Join(a.types.Names(), ", "))
		}
		props[out.Name] = modelSchema(t, out.Description)
		required = append(required, out.Name)
	}
	raw, err := json.Marshal(map[string]any{
		"type": "object", "properties": props, "required": required, "additionalProperties": false,
	})
	if err != nil {
		return nil, err
	}
	return &llm.OutputSchema{Name: schemaName(a.cfg.Name), Schema: raw}, nil
}

// modelSchema is a data type's schema as a model is given it: without
// $schema and $id, and a schema that refers to other documents ($ref) is
// replaced by its description, as providers resolve no references; the
// answer is validated against the whole schema all the same.
func modelSchema(t schemas.DataType, description string) map[string]any {
	var m map[string]any
	if json.Unmarshal(t.Schema, &m) != nil || bytes.Contains(t.Schema, []byte(`"$ref"`)) {
		m = map[string]any{"description": t.Description}
	}
	delete(m, "$schema")
	delete(m, "$id")
	if description != "" {
		m["description"] = description
	}
	return m
}

// schemaName is the agent's name as an output schema's name: letters,
// digits, _ and -.
func schemaName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
}

// executeStructured asks the model for the outputs as one JSON object,
// with the provider's structured output, and checks each value against its
// data type's schema. An answer that fails is shown to the model with what
// was wrong, once; a second failure ends the task invalid_output, and no
// value of a failed answer is returned.
func (a *Agent) executeStructured(ctx context.Context, user string) (schemas.AgentResult, error) {
	model := a.chatModel() // not nil: Execute checked
	output, err := a.outputSchema()
	if err != nil {
		return schemas.Failure(a.cfg.Name, schemas.CodeAgentError, err.Error(), false), nil
	}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: fmt.Sprintf("%s\n\nAnswer with only a JSON object with these members: %s. Its JSON Schema:\n%s",
			a.cfg.SystemPrompt, a.outputNames(), output.Schema)},
		{Role: llm.RoleUser, Content: user},
	}
	var total schemas.Usage
	var problems []string
	for attempt := 1; attempt <= outputAttempts; attempt++ {
		msg, conv, usage, err := a.converse(ctx, model, msgs, output)
		total = total.Add(usage)
		if errors.Is(err, ErrToolSteps) {
			return schemas.Failure(a.cfg.Name, schemas.CodeAgentError, err.Error(), false), nil
		}
		if res, ok := a.policyFailure(err); ok {
			return res, nil
		}
		if err != nil {
			return a.modelFailed(ctx, err)
		}
		var values map[string]schemas.TypedValue
		values, problems = a.decodeOutputs(msg.Content)
		if len(problems) == 0 {
			return schemas.AgentResult{
				Success:    true,
				Agent:      a.cfg.Name,
				Capability: a.cfg.Capability,
				Summary:    a.cfg.Name + " answered " + schemas.Plural(len(values), "output", "outputs"),
				Outputs:    values,
				Metrics:    total.Metrics(),
			}, nil
		}
		msgs = append(conv, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf(
			"Your answer was refused: %s. Answer again with only a JSON object matching this schema:\n%s",
			strings.Join(problems, "; "), output.Schema)})
	}
	res := schemas.Failure(a.cfg.Name, schemas.CodeInvalidOutput, fmt.Sprintf(
		"the model's answer failed the declared outputs %d times, so nothing was stored; last answer: %s. Describe the outputs in system_prompt, or use a model with structured output",
		outputAttempts, strings.Join(problems, "; ")), false)
	res.Metrics = total.Metrics()
	return res, nil
}

// decodeOutputs reads a structured answer: one JSON object (a Markdown
// code fence around it is taken off) whose members are the declared
// outputs, each valid for its data type. It returns the values, or every
// problem found.
func (a *Agent) decodeOutputs(reply string) (map[string]schemas.TypedValue, []string) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal([]byte(unfence(reply)), &members); err != nil {
		return nil, []string{fmt.Sprintf("the answer is not a JSON object (%v): %q", err, schemas.Clip(reply, 120))}
	}
	var problems []string
	values := make(map[string]schemas.TypedValue, len(a.cfg.Outputs))
	for _, out := range a.cfg.Outputs {
		raw, ok := members[out.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("member %q (%s) is missing", out.Name, out.DataType))
			continue
		}
		v := schemas.TypedValue{DataType: out.DataType, ContentTypeHint: out.ContentTypeHint, Value: raw, Source: a.cfg.Name}
		if err := a.types.ValidateValue(a.cfg.Name, out.Name, v); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		values[out.Name] = v
	}
	for _, name := range sortedKeys(members) {
		if _, ok := a.contract.Output(name); !ok {
			problems = append(problems, fmt.Sprintf("member %q is not a declared output (declared: %s)", name, a.outputNames()))
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return values, nil
}

// unfence takes off a Markdown code fence (```json ... ```) around s.
func unfence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	s = strings.TrimPrefix(s, "```")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
}

func (a *Agent) outputNames() string {
	names := make([]string, len(a.cfg.Outputs))
	for i, out := range a.cfg.Outputs {
		names[i] = fmt.Sprintf("%s (%s)", out.Name, out.DataType)
	}
	return strings.Join(names, ", ")
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
