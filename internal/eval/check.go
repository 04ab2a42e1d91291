package eval

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/schemas"
)

// Outcome is what one run of a case showed: a chat turn's answer and
// tool calls, or a pipeline run's outputs and the steps that ran.
type Outcome struct {
	State  string
	Code   string
	Error  string
	Answer string
	// Outputs are a pipeline's, by "STEP.NAME".
	Outputs map[string]schemas.TypedValue
	// Calls are the agents called, in order: a turn's tool calls, a
	// run's steps that started.
	Calls    []Call
	Cost     float64
	Duration time.Duration
}

// Call is one agent call: a chat tool call, or a pipeline step (Step its
// id) with the params its spec gave it.
type Call struct {
	Agent  string
	Step   string
	Params map[string]any
	// Raw is a tool call's arguments when they are not a JSON object.
	Raw string
}

// ChatOutcome is the outcome of a chat turn.
func ChatOutcome(r schemas.ChatResponse) Outcome {
	o := Outcome{State: r.State, Code: r.Code, Error: r.Error, Answer: r.Output, Cost: r.Cost,
		Duration: time.Duration(r.DurationMS) * time.Millisecond}
	for _, c := range r.ToolCalls {
		call := Call{Agent: c.Agent}
		if c.Arguments != "" && json.Unmarshal([]byte(c.Arguments), &call.Params) != nil {
			call.Raw = c.Arguments
		}
		o.Calls = append(o.Calls, call)
	}
	return o
}

// Check returns why a chat turn misses e, one sentence per expectation
// missed; none when it meets them all.
func Check(e Expect, r schemas.ChatResponse) []string { return CheckOutcome(e, ChatOutcome(r)) }

// CheckOutcome returns why o misses e, one sentence per expectation
// missed; none when it meets them all. State is "completed" unless e sets
// it.
func CheckOutcome(e Expect, o Outcome) []string {
	var miss []string
	state := e.State
	if state == "" {
		state = schemas.ChatCompleted
	}
	if o.State != state {
		detail := ""
		if o.Error != "" {
			detail = ": " + schemas.Clip(o.Error, 200)
		}
		miss = append(miss, fmt.Sprintf("state %s, want %s%s", o.State, state, detail))
	}
	if e.Code != "" && o.Code != e.Code {
		got := o.Code
		if got == "" {
			got = "none"
		}
		miss = append(miss, fmt.Sprintf("code %s, want %s", got, e.Code))
	}
	miss = append(miss, textMisses("the answer", OutputExpect{Contains: e.Contains, NotContains: e.NotContains, Regex: e.Regex, Schema: e.Schema}, o.Answer, o.Answer)...)
	for _, name := range slices.Sorted(maps.Keys(e.Outputs)) {
		v, ok := o.Outputs[name]
		if !ok {
			miss = append(miss, fmt.Sprintf("no output %s (outputs: %s)", name, strings.Join(slices.Sorted(maps.Keys(o.Outputs)), ", ")))
			continue
		}
		miss = append(miss, textMisses("output "+name, e.Outputs[name], valueText(v), string(v.Value))...)
	}
	called := make([]string, len(o.Calls))
	for i, c := range o.Calls {
		called[i] = c.Agent
	}
	if !inOrder(called, e.Agents) {
		miss = append(miss, fmt.Sprintf("agents called %s, want %s in that order", orNone(called), strings.Join(e.Agents, " -> ")))
	}
	for _, agent := range slices.Sorted(maps.Keys(e.Params)) {
		if why := paramsMiss(o.Calls, agent, e.Params[agent]); why != "" {
			miss = append(miss, why)
		}
	}
	if e.MaxCost > 0 && o.Cost > e.MaxCost {
		miss = append(miss, fmt.Sprintf("cost $%.4f, over max_cost $%.4f", o.Cost, e.MaxCost))
	}
	if e.MaxLatency > 0 && o.Duration > time.Duration(e.MaxLatency) {
		miss = append(miss, fmt.Sprintf("took %s, over max_latency %s", o.Duration, time.Duration(e.MaxLatency)))
	}
	return miss
}

// textMisses checks text (and doc, its JSON, against the schema) for what
// (the answer, an output).
func textMisses(what string, e OutputExpect, text, doc string) []string {
	var miss []string
	lower := strings.ToLower(text)
	for _, s := range e.Contains {
		if !strings.Contains(lower, strings.ToLower(s)) {
			miss = append(miss, fmt.Sprintf("%s lacks %q", what, s))
		}
	}
	for _, s := range e.NotContains {
		if strings.Contains(lower, strings.ToLower(s)) {
			miss = append(miss, fmt.Sprintf("%s holds %q", what, s))
		}
	}
	for _, re := range e.Regex {
		if rx, err := regexp.Compile(re); err != nil || !rx.MatchString(text) {
			miss = append(miss, fmt.Sprintf("%s does not match %q", what, re))
		}
	}
	if e.Schema != nil {
		if why := schemaMiss(e.Schema, what, doc); why != "" {
			miss = append(miss, why)
		}
	}
	return miss
}

// valueText is a value as text: a TEXT value's string, else its JSON.
func valueText(v schemas.TypedValue) string {
	var s string
	if json.Unmarshal(v.Value, &s) == nil {
		return s
	}
	return string(v.Value)
}

// inOrder reports whether want appears in got in order, other items
// between allowed.
func inOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// paramsMiss says why the first call of agent (an agent's name or a
// step's id) lacks a param of want ("" when it has them all).
func paramsMiss(calls []Call, agent string, want map[string]any) string {
	for _, c := range calls {
		if c.Agent != agent && (c.Step == "" || c.Step != agent) {
			continue
		}
		if c.Raw != "" {
			return fmt.Sprintf("%s was called with arguments that are not a JSON object: %s", agent, schemas.Clip(c.Raw, 120))
		}
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if !jsonEqual(c.Params[k], want[k]) {
				return fmt.Sprintf("%s was called with %s=%s, want %s", agent, k, jsonText(c.Params[k]), jsonText(want[k]))
			}
		}
		return ""
	}
	return fmt.Sprintf("%s was not called, so its params cannot be checked", agent)
}

// jsonEqual compares two values as JSON (YAML's 5 and JSON's 5.0 agree).
func jsonEqual(a, b any) bool {
	var x, y any
	if json.Unmarshal([]byte(jsonText(a)), &x) != nil || json.Unmarshal([]byte(jsonText(b)), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " -> ")
}
