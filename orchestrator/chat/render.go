package chat

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

// Data is one piece of structured context shown to the model: a kind (its
// name, "state"), a JSON object and the JSON Schema of that object. Data of
// one kind is merged into a single message (later keys win), so the model
// always sees one current "¶state" however many updates produced it.
type Data struct {
	Kind   string
	Value  map[string]any
	Schema json.RawMessage
}

// RenderData renders data as one message per kind, in the order the kinds
// first appear:
//
//	## Data: ¶state
//	```json
//	{...}
//	```
//	Schema for ¶state: {...}
func RenderData(data []Data) []llm.Message {
	var order []string
	merged := map[string]*Data{}
	for _, d := range data {
		m, ok := merged[d.Kind]
		if !ok {
			m = &Data{Kind: d.Kind, Value: map[string]any{}}
			merged[d.Kind] = m
			order = append(order, d.Kind)
		}
		maps.Copy(m.Value, d.Value)
		if len(d.Schema) > 0 {
			m.Schema = d.Schema
		}
	}
	out := make([]llm.Message, 0, len(order))
	for _, kind := range order {
		d := merged[kind]
		body, _ := json.MarshalIndent(d.Value, "", "  ") // maps of plain JSON values always marshal
		var b strings.Builder
		fmt.Fprintf(&b, "## Data: ¶%s\n```json\n%s\n```\n", kind, body)
		if len(d.Schema) > 0 {
			fmt.Fprintf(&b, "Schema for ¶%s: %s", kind, compactJSON(d.Schema))
		}
		out = append(out, llm.Message{Role: llm.RoleSystem, Content: b.String()})
	}
	return out
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v) // decoded JSON always marshals
	return string(b)
}

// SlotSummary describes a state slot without its raw contents: its type,
// hint, how many things it holds and who produced it, and the small facts
// its data type's descriptor tells (category sizes, a text preview). The
// model refers to the slot by Ref.
type SlotSummary struct {
	Ref        string         `json:"ref"`
	DataType   string         `json:"data_type"`
	Hint       string         `json:"content_type_hint,omitempty"`
	Count      int            `json:"count"`
	Holds      string         `json:"holds"`
	Source     string         `json:"source,omitempty"`
	ProducedAt time.Time      `json:"produced_at,omitzero"`
	Facts      map[string]any `json:"facts,omitempty"`
}

// StateSchema is the JSON Schema of the ¶state data shown to the model.
var StateSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "conversation_id": {"type": "string"},
    "turn": {"type": "integer", "description": "1 for the first user message of the conversation"},
    "slots": {
      "type": "object",
      "description": "Typed values produced by agents, by slot name. Agents read their inputs from these slots automatically.",
      "additionalProperties": {
        "type": "object",
        "required": ["ref", "data_type", "count"],
        "properties": {
          "ref": {"type": "string", "description": "pass this string as a tool argument to use the slot as an input"},
          "data_type": {"type": "string", "enum": ["FILE_IDS", "CATEGORIZATION", "ANALYSIS_RESULT", "TEXT", "CROSS_REF", "FOLDER_RESULT", "CHUNKS"], "description": "or a custom type"},
          "content_type_hint": {"type": "string", "description": "images, documents, links or mixed"},
          "count": {"type": "integer", "description": "files, categories, items or links held"},
          "holds": {"type": "string", "description": "what the slot holds in words: 12 images, 3 categories"},
          "source": {"type": "string", "description": "the agent that produced it"},
          "produced_at": {"type": "string", "format": "date-time"},
          "facts": {"type": "object", "description": "small facts of the data type: categories (items per category), preview (a text's first characters), passages (the text of retrieved passages with their source: answer from these)"}
        }
      }
    },
    "recent": {"type": "array", "items": {"type": "string"}, "description": "the latest agent results, newest last"}
  }
}`)

// StateData is the ¶state Data of st: slot summaries (never ID lists) and
// the latest results of the history, described by reg's data types.
func StateData(st *schemas.ConversationState, reg *schemas.DataTypeRegistry) Data {
	slots := map[string]any{}
	for name, v := range st.Slots {
		slots[name] = Summarize(name, v, reg)
	}
	var recent []string
	for i := len(st.History) - 1; i >= 0 && len(recent) < 5; i-- {
		h := st.History[i]
		if h.Kind == "result" {
			recent = append(recent, schemas.Clip(fmt.Sprintf("%s: %s", h.Agent, h.Text), 200))
		}
	}
	slices.Reverse(recent)
	value := map[string]any{"conversation_id": st.ID, "turn": st.Turns, "slots": slots}
	if len(recent) > 0 {
		value["recent"] = recent
	}
	return Data{Kind: "state", Value: value, Schema: StateSchema}
}

// Summarize describes a slot's value by its size and its type's facts,
// never its contents.
func Summarize(slot string, v schemas.TypedValue, reg *schemas.DataTypeRegistry) SlotSummary {
	return SlotSummary{Ref: SlotRefPrefix + slot, DataType: v.DataType, Hint: v.ContentTypeHint, Source: v.Source, ProducedAt: v.ProducedAt,
		Count: reg.Count(v), Holds: reg.Describe(v), Facts: reg.Facts(v)}
}

// Observation is what the model is told about one tool call: the agent's
// summary and, per output, its type, what it holds and the slot it went
// to. It never carries ID lists.
func Observation(agent string, res schemas.AgentResult, router *route.Router) string {
	if !res.Success {
		return fmt.Sprintf("%s failed: %s", agent, schemas.Clip(res.Err().Error(), 400))
	}
	reg := dataTypes(router)
	var b strings.Builder
	fmt.Fprintf(&b, "%s succeeded", agent)
	if s := strings.TrimSpace(res.Summary); s != "" {
		fmt.Fprintf(&b, ": %s", schemas.Clip(s, 300))
	}
	names := slices.Sorted(maps.Keys(res.Outputs))
	if len(names) > 0 {
		b.WriteString("\nOutputs:")
	}
	for _, name := range names {
		v := res.Outputs[name]
		fmt.Fprintf(&b, "\n- %s: %s (%s%s)", name, reg.Describe(v), v.DataType, route.HintSuffix(v.ContentTypeHint))
		if router != nil {
			if slot, ok := router.SlotFor(v.DataType, v.ContentTypeHint); ok {
				fmt.Fprintf(&b, " -> %s%s", SlotRefPrefix, slot)
			} else {
				b.WriteString(" -> kept in history")
			}
		}
	}
	return b.String()
}

// ProgressLine is the short progress message for a finished call:
// "ImageSearch returned 12 images".
func ProgressLine(agent string, res schemas.AgentResult, reg *schemas.DataTypeRegistry) string {
	if !res.Success {
		return fmt.Sprintf("%s failed: %s", agent, schemas.Clip(res.Err().Error(), 160))
	}
	names := slices.Sorted(maps.Keys(res.Outputs))
	if len(names) == 0 {
		return agent + " returned nothing"
	}
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, reg.Describe(res.Outputs[n]))
	}
	return fmt.Sprintf("%s returned %s", agent, strings.Join(parts, ", "))
}

// dataTypes is router's registry, or the default one without a router.
func dataTypes(router *route.Router) *schemas.DataTypeRegistry {
	if router == nil {
		return schemas.DefaultRegistry()
	}
	return router.DataTypes()
}
