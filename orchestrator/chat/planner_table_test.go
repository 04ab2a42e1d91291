package chat_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmesh/agentmesh/agents/builtin/analysis"
	"github.com/agentmesh/agentmesh/agents/builtin/docsearch"
	"github.com/agentmesh/agentmesh/agents/builtin/folder"
	"github.com/agentmesh/agentmesh/agents/builtin/imagesearch"
	"github.com/agentmesh/agentmesh/agents/builtin/summarize"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	meshmcp "github.com/agentmesh/agentmesh/bridge/mcp"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

// The contracts the planner is tested against are the project's own: the
// built-in agents (what `agentmesh up` and `demo` start), the README's Go
// agent (examples/goagent), the Node.js word counter (examples/node) and
// the MCP example server's tools (examples/mcp) as the bridge derives them.

func builtinContracts() []schemas.AgentContract {
	return []schemas.AgentContract{
		(&imagesearch.Agent{}).Contract(), (&analysis.Agent{}).Contract(), (&folder.Agent{}).Contract(),
		(&docsearch.Agent{}).Contract(), (&summarize.Agent{}).Contract(), text.Agent{}.Contract(),
	}
}

// shoutContract is examples/goagent's agent.
func shoutContract() schemas.AgentContract {
	return schemas.AgentContract{Name: "ShoutAgent", Version: "1.0.0", Capability: schemas.CapTransformation,
		Description: "Upper-cases a text.",
		Inputs:      []schemas.TypedInput{{Name: "text", DataType: schemas.TypeText, Required: true}},
		Outputs:     []schemas.TypedOutput{{Name: "text", DataType: schemas.TypeText}}}
}

// nodeWordCountContract is examples/node/agent.js's contract.
func nodeWordCountContract() schemas.AgentContract {
	return schemas.AgentContract{Name: "NodeWordCount", Version: "1.0.0", Capability: schemas.CapAnalysis,
		Description: "Counts the words of documents or of a text and names the most frequent words (written in Node.js). " +
			"With neither, it counts the words of the instruction.",
		Inputs: []schemas.TypedInput{
			{Name: "documents", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentDocuments, Description: "documents whose words to count"},
			{Name: "text", DataType: schemas.TypeText, Description: "a text whose words to count"},
		},
		Outputs: []schemas.TypedOutput{
			{Name: "counts", DataType: schemas.TypeAnalysisResult, Description: "per document: features.words and the most frequent words as labels"},
			{Name: "report", DataType: schemas.TypeText, ContentTypeHint: "wordcount", Description: "one line per document: its id and word count"},
			{Name: "frequencies", DataType: "WORD_FREQUENCIES", Mergeable: true, Description: "how often each word occurs, over all texts"},
		},
		DataTypes: []schemas.DataTypeDefinition{{Name: "WORD_FREQUENCIES", Description: "How often each word occurs: word -> count (at least 1).",
			Schema: json.RawMessage(`{"type":"object","additionalProperties":{"type":"integer","minimum":1}}`), Merge: "sum"}},
		Params: json.RawMessage(`{"type":"object","properties":{"top":{"type":"integer","minimum":1,"maximum":20,"description":"how many frequent words to name (default 3)"}},"additionalProperties":false}`),
	}
}

// mcpContracts are the agents `agentmesh agent --mcp 'node
// examples/mcp/server.mjs'` starts, derived by the bridge from the tools
// as server.mjs declares them.
func mcpContracts(t testing.TB) []schemas.AgentContract {
	tools := []*mcp.Tool{
		{Name: "word_count", Title: "Word count", Description: "Counts the words of a text and names the most frequent ones.",
			InputSchema: jsonAny(`{"type":"object","properties":{"text":{"type":"string","description":"the text whose words to count"},
				"top":{"type":"integer","minimum":1,"maximum":20,"description":"how many frequent words to name"}},"required":["text"]}`),
			OutputSchema: jsonAny(`{"type":"object","properties":{"words":{"type":"integer"},"top":{"type":"array","items":{"type":"string"}}}}`)},
		{Name: "reverse", Description: "Reverses the order of the words of a text.",
			InputSchema: jsonAny(`{"type":"object","properties":{"text":{"type":"string","description":"the text to reverse"}},"required":["text"]}`)},
		{Name: "fail", Description: "Always fails, to show how a tool error reaches the mesh.",
			InputSchema: jsonAny(`{"type":"object","properties":{"reason":{"type":"string"}}}`)},
		{Name: "toggle_echo", Description: "Adds the tool echo, or removes it when it is there.", InputSchema: jsonAny(`{"type":"object"}`)},
	}
	var out []schemas.AgentContract
	for _, tool := range tools {
		c, _, err := meshmcp.ToolContract(tool, "")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func jsonAny(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

// plannerCase is one request and the plan expected for it: the agents in
// order, and params each step must have (agent -> param -> value). An
// empty plan with fail set expects "I can't plan this without a model"
// naming fail.
type plannerCase struct {
	set     string // contract set: builtin, shout, node, mcp
	message string
	slots   map[string]schemas.TypedValue
	want    []string
	params  map[string]map[string]any
	fail    string
}

const (
	imgSearch = imagesearch.Name
	imgAn     = analysis.Name
	folderA   = folder.Name
	docSearch = docsearch.Name
	summ      = summarize.Name
	textA     = text.Name
)

func plannerCases() []plannerCase {
	images := map[string]schemas.TypedValue{route.SlotImageIDs: schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, "a"), "x")}
	docs := map[string]schemas.TypedValue{route.SlotDocumentIDs: schemas.FilesValue(schemas.FromIDs(schemas.ContentDocuments, "d"), "x")}
	someText := map[string]schemas.TypedValue{route.SlotText: schemas.TextValue("an earlier summary", "x")}
	q := func(agent, query string) map[string]map[string]any {
		return map[string]map[string]any{agent: {"query": query}}
	}
	op := func(o, txt string) map[string]map[string]any {
		return map[string]map[string]any{textA: {"op": o, "text": txt}}
	}
	return []plannerCase{
		// README, demo, `agentmesh up`.
		{set: "builtin", message: "Find sunset images and organize them into folders", want: []string{imgSearch, imgAn, folderA}, params: q(imgSearch, "sunset")},
		{set: "builtin", message: "find sunset images", want: []string{imgSearch}, params: q(imgSearch, "sunset")},
		{set: "builtin", message: "find sunsets", want: []string{imgSearch}, params: q(imgSearch, "sunsets")},
		{set: "builtin", message: "Find the snowy forest photos", want: []string{imgSearch}, params: q(imgSearch, "snowy forest")},
		{set: "builtin", message: "search for 'red cars' then categorize them", want: []string{imgSearch, imgAn}, params: q(imgSearch, "red cars")},
		{set: "builtin", message: "organize into folders the beach photos you find", want: []string{imgSearch, imgAn, folderA}, params: q(imgSearch, "beach")},
		{set: "builtin", message: "categorize the night images", want: []string{imgSearch, imgAn}, params: q(imgSearch, "night")},
		{set: "builtin", message: "analyse my photos", want: []string{imgSearch, imgAn}},
		{set: "builtin", message: "group the images by category", want: []string{imgSearch, imgAn}},
		{set: "builtin", message: "sort my pictures into folders", want: []string{imgSearch, imgAn, folderA}},
		{set: "builtin", message: "now organize the ones from last time", slots: images, want: []string{imgAn, folderA}},
		{set: "builtin", message: "find 3 sunset images", want: []string{imgSearch}, params: map[string]map[string]any{imgSearch: {"query": "sunset", "limit": int64(3)}}},
		{set: "builtin", message: "show me the seascape pictures", want: []string{imgSearch}, params: q(imgSearch, "seascape")},
		// Documents: issue 30's "summarize the documents".
		{set: "builtin", message: "summarize the documents", want: []string{docSearch, summ}},
		{set: "builtin", message: "summarise the docs", want: []string{docSearch, summ}},
		{set: "builtin", message: "summarize", want: []string{docSearch, summ}},
		{set: "builtin", message: "find documents about jetstream and summarize them", want: []string{docSearch, summ}, params: q(docSearch, "jetstream")},
		{set: "builtin", message: "write a summary of the PDFs about budgets", want: []string{docSearch, summ}, params: q(docSearch, "budgets")},
		{set: "builtin", message: "summarize the documents in 2 sentences", want: []string{docSearch, summ}, params: map[string]map[string]any{summ: {"sentences": int64(2)}}},
		{set: "builtin", message: "summarize them", slots: docs, want: []string{summ}},
		{set: "builtin", message: "find the documents about nats", want: []string{docSearch}, params: q(docSearch, "nats")},
		{set: "builtin", message: "search the docs for 'object store'", want: []string{docSearch}, params: q(docSearch, "object store")},
		// Text: issue 30's "reverse the text hello world", the security guide's example.
		{set: "builtin", message: "reverse the text hello world", want: []string{textA}, params: op("reverse", "hello world")},
		{set: "builtin", message: "count the words in hello world", want: []string{textA}, params: op("wordcount", "hello world")},
		{set: "builtin", message: "upper-case 'good morning'", want: []string{textA}, params: op("upper", "good morning")},
		{set: "builtin", message: "make this lower case: SHOUTING IS RUDE", want: []string{textA}, params: op("lower", "SHOUTING IS RUDE")},
		{set: "builtin", message: "title case the quick brown fox", want: []string{textA}, params: op("title", "quick brown fox")},
		{set: "builtin", message: "uppercase hello", want: []string{textA}, params: op("upper", "hello")},
		{set: "builtin", message: "word count of \"red sky at night\"", want: []string{textA}, params: op("wordcount", "red sky at night")},
		{set: "builtin", message: "reverse it", slots: someText, want: []string{textA}, params: map[string]map[string]any{textA: {"op": "reverse"}}},
		{set: "builtin", message: "uppercase the summary of the documents", want: []string{docSearch, summ, textA}, params: map[string]map[string]any{textA: {"op": "upper"}}},
		{set: "builtin", message: "find sunset images and summarize the documents about nats", want: []string{docSearch, summ, imgSearch}},
		// docs/security.md runs TextAgent alone.
		{set: "text", message: "count the words in hello world", want: []string{textA}, params: op("wordcount", "hello world")},
		// Examples' agents.
		{set: "shout", message: "shout hello world", want: []string{"ShoutAgent"}, params: map[string]map[string]any{"ShoutAgent": {"text": "hello world"}}},
		{set: "node", message: "count the words of the budget documents", want: []string{docSearch, "NodeWordCount"}, params: q(docSearch, "budget")},
		{set: "node", message: "count the words of this sentence", want: []string{"NodeWordCount"}, params: map[string]map[string]any{"NodeWordCount": {}}},
		{set: "node", message: "analyze the words of this short sentence", want: []string{"NodeWordCount"}, params: map[string]map[string]any{"NodeWordCount": {}}},
		{set: "node", message: "now count the words of my documents", slots: docs, want: []string{"NodeWordCount"}},
		{set: "node", message: "name the top 5 words of 'a b a c a b'", want: []string{"NodeWordCount"}, params: map[string]map[string]any{"NodeWordCount": {"top": int64(5), "text": "a b a c a b"}}},
		{set: "mcp", message: "reverse the words of 'red sky at night'", want: []string{"reverse"}, params: map[string]map[string]any{"reverse": {"text": "red sky at night"}}},
		{set: "mcp", message: "word_count red sky at night", want: []string{"word_count"}, params: map[string]map[string]any{"word_count": {"text": "red sky at night"}}},
		{set: "mcp", message: "toggle echo", want: []string{"toggle_echo"}},
		{set: "builtin", message: "organize them into folders, require approval", slots: images, want: []string{imgAn, folderA}, params: map[string]map[string]any{folderA: {"require_approval": true}}},
		{set: "builtin", message: "find IMG_0042.jpg", want: []string{imgSearch}, params: q(imgSearch, "IMG_0042.jpg")},
		{set: "builtin", message: "find the 10 best sunset photos", want: []string{imgSearch}, params: map[string]map[string]any{imgSearch: {"query": "sunset", "limit": int64(10)}}},
		{set: "builtin", message: "lowercase HELLO THERE", want: []string{textA}, params: op("lower", "HELLO THERE")},
		{set: "builtin", message: "summarize the documents, then uppercase the summary", want: []string{docSearch, summ, textA}, params: map[string]map[string]any{docSearch: {"query": ""}, textA: {"op": "upper"}}},
		// What it cannot plan, and says so.
		{set: "builtin", message: "delete all images", fail: `speaks of "delete"`},
		{set: "builtin", message: "find links", fail: "no live agent reads or produces links"},
		{set: "builtin", message: "hello there", fail: `speak of "hello"`},
		{set: "builtin", message: "evaluate the photos", fail: "no live agent has capability EVALUATION"},
		{set: "builtin", message: "reverse it", fail: `TextAgent needs TEXT (input "text"): give the text in quotes`},
		{set: "folder", message: "organize into folders", fail: `FolderAgent needs CATEGORIZATION (input "categories")`},
		{set: "builtin", message: "translate this into French", fail: `"translate", "french"`},
	}
}

func contractSet(t testing.TB, set string) []schemas.AgentContract {
	switch set {
	case "builtin":
		return builtinContracts()
	case "shout":
		return append(builtinContracts(), shoutContract())
	case "node":
		return append(builtinContracts(), nodeWordCountContract())
	case "mcp":
		return append(builtinContracts(), mcpContracts(t)...)
	case "text":
		return []schemas.AgentContract{text.Agent{}.Contract()}
	case "folder":
		return []schemas.AgentContract{(&folder.Agent{}).Contract()}
	}
	t.Fatalf("no contract set %q", set)
	return nil
}

// TestPlanOfflineFromContracts plans requests worded as the README, the
// docs and the examples word them against the project's own contracts.
// At least 90% must be planned as expected; every miss is listed.
func TestPlanOfflineFromContracts(t *testing.T) {
	cases := plannerCases()
	if len(cases) < 40 {
		t.Fatalf("%d requests; the table needs at least 40", len(cases))
	}
	right := 0
	for _, tc := range cases {
		problem := checkPlan(t, tc)
		if problem == "" {
			right++
			continue
		}
		t.Errorf("%s %q: %s", tc.set, tc.message, problem)
	}
	t.Logf("%d of %d requests planned as expected", right, len(cases))
	if right*10 < len(cases)*9 {
		t.Errorf("only %d of %d planned right, want at least 90%%", right, len(cases))
	}
}

func checkPlan(t testing.TB, tc plannerCase) string {
	plan, err := chat.PlanOffline(tc.message, contractSet(t, tc.set), tc.slots, nil)
	if tc.fail != "" {
		switch {
		case err == nil:
			return fmt.Sprintf("planned %v, want an error naming %q", plan.Agents(), tc.fail)
		case !errors.Is(err, chat.ErrNoPlan) || !strings.HasPrefix(err.Error(), "I can't plan this without a model: "):
			return fmt.Sprintf("err = %v, want ErrNoPlan", err)
		case !strings.Contains(err.Error(), tc.fail):
			return fmt.Sprintf("err = %v, want it to name %q", err, tc.fail)
		}
		return ""
	}
	if err != nil {
		return err.Error()
	}
	if got := plan.Agents(); !slices.Equal(got, tc.want) {
		return fmt.Sprintf("plan %v, want %v (%s)", got, tc.want, reasons(plan))
	}
	for _, s := range plan.Steps {
		want, ok := tc.params[s.Agent]
		if !ok {
			continue
		}
		if len(want) == 0 && len(s.Params) != 0 {
			return fmt.Sprintf("%s params %v, want none", s.Agent, s.Params)
		}
		for k, v := range want {
			if s.Params[k] != v {
				return fmt.Sprintf("%s params %v, want %s=%v", s.Agent, s.Params, k, v)
			}
		}
	}
	return ""
}

func reasons(p chat.Plan) string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, fmt.Sprintf("%s %v: %s", s.Agent, s.Params, s.Reason))
	}
	return strings.Join(out, "; ")
}

// TestPlanOfflineREADMEExamples keeps the README's "Without an API key"
// examples true: each `agentmesh chat "..."  # A -> B` line plans as its
// comment says, against the built-in agents.
func TestPlanOfflineREADMEExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^agentmesh chat "([^"]+)" +# (.+)$`)
	found := line.FindAllStringSubmatch(string(readme), -1)
	if len(found) < 4 {
		t.Fatalf("the README shows %d offline chat examples, want the list under \"Without an API key\"", len(found))
	}
	for _, m := range found {
		var want []string
		for _, part := range strings.Split(m[2], " -> ") {
			want = append(want, strings.Fields(part)[0])
		}
		plan, err := chat.PlanOffline(m[1], builtinContracts(), nil, nil)
		if err != nil || !slices.Equal(plan.Agents(), want) {
			t.Errorf("README: %q plans %v (%v), the README says %v", m[1], plan.Agents(), err, want)
		}
	}
}
