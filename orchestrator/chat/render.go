package chat

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

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
func RenderData(data []Data) []openai.ChatCompletionMessage {
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
	out := make([]openai.ChatCompletionMessage, 0, len(order))
	for _, kind := range order {
		d := merged[kind]
		body, _ := json.MarshalIndent(d.Value, "", "  ") // maps of plain JSON values always marshal
		var b strings.Builder
		fmt.Fprintf(&b, "## Data: ¶%s\n```json\n%s\n```\n", kind, body)
		if len(d.Schema) > 0 {
			fmt.Fprintf(&b, "Schema for ¶%s: %s", kind, compactJSON(d.Schema))
		}
		out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: b.String()})
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
// hint, how many items it holds and who produced it. The model refers to
// the slot by Ref.
type SlotSummary struct {
	Ref        string         `json:"ref"`
	DataType   string         `json:"data_type"`
	Hint       string         `json:"content_type_hint,omitempty"`
	Count      int            `json:"count"`
	Source     string         `json:"source,omitempty"`
	ProducedAt time.Time      `json:"produced_at,omitzero"`
	Categories map[string]int `json:"categories,omitempty"` // CATEGORIZATION: items per category
	Preview    string         `json:"preview,omitempty"`    // TEXT: the first characters
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
          "data_type": {"type": "string", "enum": ["FILE_IDS", "CATEGORIZATION", "ANALYSIS_RESULT", "TEXT", "CROSS_REF", "FOLDER_RESULT"], "description": "or a custom type"},
          "content_type_hint": {"type": "string", "description": "images, documents, links or mixed"},
          "count": {"type": "integer", "description": "files, categories, items or links held"},
          "source": {"type": "string", "description": "the agent that produced it"},
          "produced_at": {"type": "string", "format": "date-time"},
          "categories": {"type": "object", "additionalProperties": {"type": "integer"}},
          "preview": {"type": "string"}
        }
      }
    },
    "recent": {"type": "array", "items": {"type": "string"}, "description": "the latest agent results, newest last"}
  }
}`)

// StateData is the ¶state Data of st: slot summaries (never ID lists) and
// the latest results of the history.
func StateData(st *schemas.ConversationState) Data {
	slots := map[string]any{}
	for name, v := range st.Slots {
		slots[name] = Summarize(name, v)
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

// Summarize describes a slot's value by its size, never its contents.
func Summarize(slot string, v schemas.TypedValue) SlotSummary {
	s := SlotSummary{Ref: SlotRefPrefix + slot, DataType: v.DataType, Hint: v.ContentTypeHint, Source: v.Source, ProducedAt: v.ProducedAt}
	s.Count = countValue(v)
	switch v.DataType {
	case schemas.TypeCategorization:
		var c schemas.Categorization
		if v.Decode(&c) == nil {
			s.Categories = map[string]int{}
			for name, ids := range c.Categories {
				s.Categories[name] = len(ids)
			}
		}
	case schemas.TypeText:
		if t, err := v.Text(); err == nil {
			s.Preview = schemas.Clip(t, 160)
		}
	}
	return s
}

// countValue counts what a value holds: files, categories, analysed items,
// links, folders; 1 for anything else that is not empty.
func countValue(v schemas.TypedValue) int {
	switch v.DataType {
	case schemas.TypeFileIDs:
		if fc, err := v.Files(); err == nil {
			return fc.Count()
		}
	case schemas.TypeCategorization:
		var c schemas.Categorization
		if v.Decode(&c) == nil {
			return len(c.Categories)
		}
	case schemas.TypeAnalysisResult:
		var a schemas.AnalysisResult
		if v.Decode(&a) == nil {
			return len(a.Items)
		}
	case schemas.TypeCrossRef:
		var x schemas.CrossRef
		if v.Decode(&x) == nil {
			return len(x.Links)
		}
	case schemas.TypeFolderResult:
		var f schemas.FolderResult
		if v.Decode(&f) == nil {
			return len(f.Folders)
		}
	}
	if len(v.Value) == 0 || string(v.Value) == "null" {
		return 0
	}
	return 1
}

// describeCount says what a value holds in words: "12 images",
// "3 categories", "5 analysed files", "4 folders (12 files moved)".
func describeCount(v schemas.TypedValue) string {
	n := countValue(v)
	switch v.DataType {
	case schemas.TypeFileIDs:
		kind := v.ContentTypeHint
		if kind == "" || kind == schemas.ContentMixed {
			kind = "files"
		}
		if n == 1 {
			kind = strings.TrimSuffix(kind, "s")
		}
		return fmt.Sprintf("%d %s", n, kind)
	case schemas.TypeCategorization:
		return plural(n, "category", "categories")
	case schemas.TypeAnalysisResult:
		return plural(n, "analysed file", "analysed files")
	case schemas.TypeCrossRef:
		return plural(n, "link", "links")
	case schemas.TypeFolderResult:
		var f schemas.FolderResult
		_ = v.Decode(&f)
		return fmt.Sprintf("%s (%d files moved)", plural(n, "folder", "folders"), f.Moved)
	case schemas.TypeText:
		t, _ := v.Text()
		return fmt.Sprintf("text of %d characters", len([]rune(t)))
	}
	return plural(n, "value", "values")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Observation is what the model is told about one tool call: the agent's
// summary and, per output, its type, count and the slot it went to. It
// never carries ID lists.
func Observation(agent string, res schemas.AgentResult, router *route.Router) string {
	if !res.Success {
		return fmt.Sprintf("%s failed: %s", agent, schemas.Clip(res.Err().Error(), 400))
	}
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
		fmt.Fprintf(&b, "\n- %s: %s (%s%s)", name, describeCount(v), v.DataType, route.HintSuffix(v.ContentTypeHint))
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
func ProgressLine(agent string, res schemas.AgentResult) string {
	if !res.Success {
		return fmt.Sprintf("%s failed: %s", agent, schemas.Clip(res.Err().Error(), 160))
	}
	names := slices.Sorted(maps.Keys(res.Outputs))
	if len(names) == 0 {
		return agent + " returned nothing"
	}
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, describeCount(res.Outputs[n]))
	}
	return fmt.Sprintf("%s returned %s", agent, strings.Join(parts, ", "))
}
