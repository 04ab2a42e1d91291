package eval

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/schemas"
)

// Check returns why a turn misses e, one sentence per expectation missed;
// none when it meets them all.
func Check(e Expect, r schemas.ChatResponse) []string {
	var miss []string
	state := e.State
	if state == "" {
		state = schemas.ChatCompleted
	}
	if r.State != state {
		detail := ""
		if r.Error != "" {
			detail = ": " + schemas.Clip(r.Error, 200)
		}
		miss = append(miss, fmt.Sprintf("state %s, want %s%s", r.State, state, detail))
	}
	answer := strings.ToLower(r.Output)
	for _, s := range e.Contains {
		if !strings.Contains(answer, strings.ToLower(s)) {
			miss = append(miss, fmt.Sprintf("the answer lacks %q", s))
		}
	}
	for _, s := range e.NotContains {
		if strings.Contains(answer, strings.ToLower(s)) {
			miss = append(miss, fmt.Sprintf("the answer holds %q", s))
		}
	}
	for _, re := range e.Regex {
		if rx, err := regexp.Compile(re); err != nil || !rx.MatchString(r.Output) {
			miss = append(miss, fmt.Sprintf("the answer does not match %q", re))
		}
	}
	if e.Schema != nil {
		if why := schemaMiss(e.Schema, "the answer", r.Output); why != "" {
			miss = append(miss, why)
		}
	}
	called := make([]string, len(r.ToolCalls))
	for i, c := range r.ToolCalls {
		called[i] = c.Agent
	}
	if !inOrder(called, e.Agents) {
		miss = append(miss, fmt.Sprintf("agents called %s, want %s in that order", orNone(called), strings.Join(e.Agents, " -> ")))
	}
	for agent, want := range e.Params {
		if why := paramsMiss(r.ToolCalls, agent, want); why != "" {
			miss = append(miss, why)
		}
	}
	if e.MaxCost > 0 && r.Cost > e.MaxCost {
		miss = append(miss, fmt.Sprintf("cost $%.4f, over max_cost $%.4f", r.Cost, e.MaxCost))
	}
	if took := time.Duration(r.DurationMS) * time.Millisecond; e.MaxLatency > 0 && took > time.Duration(e.MaxLatency) {
		miss = append(miss, fmt.Sprintf("took %s, over max_latency %s", took, time.Duration(e.MaxLatency)))
	}
	return miss
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

// paramsMiss says why the first call of agent lacks a param of want ("" when
// it has them all).
func paramsMiss(calls []schemas.ToolCallRecord, agent string, want map[string]any) string {
	for _, c := range calls {
		if c.Agent != agent {
			continue
		}
		var got map[string]any
		if c.Arguments != "" {
			if err := json.Unmarshal([]byte(c.Arguments), &got); err != nil {
				return fmt.Sprintf("%s was called with arguments that are not a JSON object: %s", agent, schemas.Clip(c.Arguments, 120))
			}
		}
		for k, w := range want {
			if !jsonEqual(got[k], w) {
				return fmt.Sprintf("%s was called with %s=%s, want %s", agent, k, jsonText(got[k]), jsonText(w))
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
