package chat_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/internal/fixture"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

func TestToolsOnePerAgentFromContracts(t *testing.T) {
	router := route.NewRouter()
	tools := chat.Tools([]schemas.AgentContract{chatFolderContract(), chatSearchContract(), chatAnalysisContract()}, router)
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "FolderOrganizer,ImageAnalysis,ImageSearch" {
		t.Fatalf("tools = %v", names)
	}
	analysis := tools[1]
	for _, want := range []string{"Categorizes images", "Capability: ANALYSIS", "images (FILE_IDS, images, required, from †state.current_image_ids)", "categories (CATEGORIZATION, into †state.current_categorization)"} {
		if !strings.Contains(analysis.Description, want) {
			t.Errorf("description %q lacks %q", analysis.Description, want)
		}
	}
	// An agent without params gets an object schema with its typed inputs:
	// a FILE_IDS input (whose schema references others) as a slot reference.
	var params struct {
		Type       string                    `json:"type"`
		Properties map[string]map[string]any `json:"properties"`
	}
	if p, _ := json.Marshal(analysis.Parameters); json.Unmarshal(p, &params) != nil || params.Type != "object" || len(params.Properties) != 1 ||
		params.Properties["images"]["type"] != "string" || !strings.Contains(fmt.Sprint(params.Properties["images"]["description"]), "†state.<slot>") {
		t.Errorf("parameters of an agent without params = %s", p)
	}
	if p, _ := json.Marshal(tools[2].Parameters); !jsonEqual(p, searchParams) {
		t.Errorf("search parameters = %s", p)
	}
}

// Typed inputs are tool arguments: a TEXT input takes a literal string,
// advertised in the tool's parameters, checked against TEXT's schema.
func TestToolTakesLiteralInputs(t *testing.T) {
	text := schemas.AgentContract{Name: "TextAgent", Capability: "TRANSFORMATION", Description: "changes text",
		Inputs:  []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Description: "the text to change"}},
		Params:  json.RawMessage(`{"type":"object","properties":{"op":{"type":"string"}},"additionalProperties":false}`),
		Outputs: []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}}
	tool := chat.Tool(text, route.NewRouter())
	p, _ := json.Marshal(tool.Parameters)
	var params struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if json.Unmarshal(p, &params) != nil || params.Properties["text"]["type"] != "string" || params.Properties["op"]["type"] != "string" {
		t.Fatalf("TextAgent tool parameters = %s, want op and a string text", p)
	}
	args, err := chat.ParseToolArgs(text, `{"text":"Hello there","op":"upper"}`, nil, schemas.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if v := args.Literals["text"]; v.DataType != schemas.TypeText || string(v.Value) != `"Hello there"` || args.Params["op"] != "upper" || len(args.Params) != 1 {
		t.Errorf("args = %+v", args)
	}
	if _, err := chat.ParseToolArgs(text, `{"text":42}`, nil, schemas.DefaultRegistry()); !errors.Is(err, chat.ErrBadToolCall) || !strings.Contains(err.Error(), "TEXT value") {
		t.Errorf("a number for a TEXT input: %v", err)
	}
}

func TestParseToolArgs(t *testing.T) {
	cats := fixture.MustValue(t, schemas.TypeCategorization, schemas.Categorization{Categories: map[string][]string{"a": {"1"}}}, "x")
	slots := map[string]schemas.TypedValue{
		route.SlotImageIDs:       schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, "1"), "x"),
		"older_images":           schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, "2"), "x"),
		route.SlotCategorization: cats,
	}
	for _, tc := range []struct {
		contract schemas.AgentContract
		args     string
		params   string
		refs     string
		err      string
	}{
		{chatSearchContract(), `{"query":"sunset","limit":3}`, `map[limit:3 query:sunset]`, `map[]`, ""},
		{chatSearchContract(), ``, "", "", "query"}, // required by the params schema
		{chatSearchContract(), `{"query": "sun`, "", "", "not a JSON object"},
		{chatSearchContract(), `{"query":"a"} {}`, "", "", "trailing data"},
		{chatSearchContract(), `{"query": 5}`, "", "", "query"},
		{chatAnalysisContract(), `{"images":"†state.older_images"}`, `map[]`, `map[images:older_images]`, ""},
		{chatAnalysisContract(), `{"from":"†state.older_images"}`, `map[]`, `map[images:older_images]`, ""},
		{chatAnalysisContract(), `{"images":"†state.current_categorization"}`, "", "", "takes FILE_IDS"},
		{chatAnalysisContract(), `{"images":"†state.nothing_here"}`, "", "", `slot "nothing_here", which is empty`},
		{chatFolderContract(), `{"x":"†state.current_image_ids"}`, "", "", "no input of that type"},
		{chatAnalysisContract(), `{"images":{"ids":["9"],"content_type":"images","count":1}}`, `map[]`, `map[]`, ""}, // a literal
		{chatAnalysisContract(), `{"images":{"ids":[9]}}`, "", "", `FILE_IDS value "images" of agent ImageAnalysis is invalid`},
	} {
		got, err := chat.ParseToolArgs(tc.contract, tc.args, slots, schemas.DefaultRegistry())
		if tc.err != "" {
			if !errors.Is(err, chat.ErrBadToolCall) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s(%s): err = %v, want ErrBadToolCall mentioning %q", tc.contract.Name, tc.args, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s(%s): %v", tc.contract.Name, tc.args, err)
			continue
		}
		if p, r := fmt.Sprint(got.Params), fmt.Sprint(got.Refs); p != tc.params || r != tc.refs {
			t.Errorf("%s(%s) = params %s refs %s, want %s %s", tc.contract.Name, tc.args, p, r, tc.params, tc.refs)
		}
	}
}

func TestRenderDataMergesKindsAndShowsNoIDs(t *testing.T) {
	st := schemas.NewConversationState("c1")
	st.Turns = 2
	st.Slots[route.SlotImageIDs] = schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, "secret-1", "secret-2", "secret-3"), "ImageSearch")
	st.Slots[route.SlotCategorization] = fixture.MustValue(t, schemas.TypeCategorization,
		schemas.Categorization{Categories: map[string][]string{"beach": {"secret-1", "secret-2"}, "city": {"secret-3"}}}, "ImageAnalysis")
	st.Slots[route.SlotText] = schemas.TextValue("a short text", "Summarizer")
	data := chat.StateData(st, schemas.DefaultRegistry())
	extra := chat.Data{Kind: "state", Value: map[string]any{"note": "merged"}}
	other := chat.Data{Kind: "agents", Value: map[string]any{"live": 3}}
	msgs := chat.RenderData([]chat.Data{data, other, extra})
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want one per kind", len(msgs))
	}
	text := msgs[0].Content
	if !strings.HasPrefix(text, "## Data: ¶state\n```json\n{") || !strings.Contains(text, "\n```\nSchema for ¶state: {") {
		t.Errorf("rendering = %q", text)
	}
	for _, want := range []string{`"note": "merged"`, `"count": 3`, `"beach": 2`, `"ref": "†state.current_image_ids"`, `"preview": "a short text"`, `"turn": 2`} {
		if !strings.Contains(text, want) {
			t.Errorf("state data lacks %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, "secret-") {
		t.Errorf("state data shows file IDs:\n%s", text)
	}
	if !strings.HasPrefix(msgs[1].Content, "## Data: ¶agents") || strings.Contains(msgs[1].Content, "Schema for") {
		t.Errorf("second kind = %q", msgs[1].Content)
	}
}

func TestObservationHasCountsNotIDs(t *testing.T) {
	res := fixture.OK("ImageSearch", "found 3 images", map[string]schemas.TypedValue{
		"images":  schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, "secret-1", "secret-2", "secret-3"), "ImageSearch"),
		"folders": fixture.MustValue(t, schemas.TypeFolderResult, schemas.FolderResult{Folders: map[string][]string{"a": {"secret-1"}}, Moved: 1}, "x"),
	})
	obs := chat.Observation("ImageSearch", res, route.NewRouter())
	for _, want := range []string{"ImageSearch succeeded: found 3 images", "images: 3 images (FILE_IDS, images) -> †state.current_image_ids", "folders: 1 folder (1 file moved) (FOLDER_RESULT) -> kept in history"} {
		if !strings.Contains(obs, want) {
			t.Errorf("observation %q lacks %q", obs, want)
		}
	}
	if strings.Contains(obs, "secret-") {
		t.Errorf("observation shows IDs: %q", obs)
	}
	failed := chat.Observation("X", schemas.Failure("X", schemas.CodeTimeout, "deadline passed", true), nil)
	if failed != "X failed: timeout: deadline passed" {
		t.Errorf("failure observation = %q", failed)
	}
	if line := chat.ProgressLine("ImageSearch", res, schemas.DefaultRegistry()); line != "ImageSearch returned 1 folder (1 file moved), 3 images" {
		t.Errorf("progress = %q", line)
	}
}

func TestPruneHistoryKeepsNewestWholeTurns(t *testing.T) {
	turn := func(n int) []llm.Message {
		return []llm.Message{
			{Role: "user", Content: fmt.Sprintf("turn %d %s", n, strings.Repeat("x", 400))},
			{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "c", Name: "A", Arguments: "{}"}}},
			{Role: "tool", ToolCallID: "c", Content: "A succeeded"},
			{Role: "assistant", Content: "done"},
		}
	}
	turns := [][]llm.Message{turn(1), turn(2), turn(3)}
	per := 0
	for _, m := range turn(1) {
		per += chat.EstimateTokens(m)
	}
	for _, tc := range []struct{ budget, want int }{{0, 0}, {per - 1, 0}, {per, 1}, {2*per + 5, 2}, {100 * per, 3}} {
		got := chat.PruneHistory(turns, tc.budget)
		if len(got) != 4*tc.want {
			t.Errorf("budget %d: %d messages, want %d whole turns", tc.budget, len(got), tc.want)
			continue
		}
		if tc.want > 0 && !strings.HasPrefix(got[0].Content, fmt.Sprintf("turn %d ", 4-tc.want)) {
			t.Errorf("budget %d: starts with %q, want the newest turns", tc.budget, got[0].Content[:8])
		}
	}
}

// Tool-call arguments come from a model: whatever they are, parsing ends
// in arguments that pass the contract or in ErrBadToolCall, never a panic.
func FuzzParseToolArgs(f *testing.F) {
	for _, s := range []string{`{"query":"sunset"}`, `{"images":"†state.current_image_ids"}`, `{"query": "sun`, `[]`, `null`, `{"query":1e400}`, ``} {
		f.Add(s)
	}
	slots := map[string]schemas.TypedValue{route.SlotImageIDs: schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, "1"), "x")}
	contracts := []schemas.AgentContract{chatSearchContract(), chatAnalysisContract()}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, c := range contracts {
			args, err := chat.ParseToolArgs(c, raw, slots, schemas.DefaultRegistry())
			if err != nil {
				if !errors.Is(err, chat.ErrBadToolCall) {
					t.Fatalf("%s(%q): error %v is not ErrBadToolCall", c.Name, raw, err)
				}
				continue
			}
			if err := c.ValidateParams(args.Params); err != nil {
				t.Fatalf("%s(%q): accepted params fail the contract: %v", c.Name, raw, err)
			}
			for in, slot := range args.Refs {
				if _, ok := slots[slot]; !ok {
					t.Fatalf("%s(%q): input %s refers to empty slot %s", c.Name, raw, in, slot)
				}
			}
		}
	})
}
