package chat_test

import (
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/analysis"
	"github.com/agentmesh/agentmesh/agents/builtin/docsearch"
	"github.com/agentmesh/agentmesh/agents/builtin/folder"
	"github.com/agentmesh/agentmesh/agents/builtin/imagesearch"
	"github.com/agentmesh/agentmesh/agents/builtin/knowledge"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
	"github.com/agentmesh/agentmesh/agents/builtin/summarize"
	"github.com/agentmesh/agentmesh/agents/builtin/text"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

// builtinMesh runs the built-in agents, as `agentmesh up` does, over the
// sample images and documents `up` and `demo` store, with one orchestrator
// replica and no LLM.
func builtinMesh(t *testing.T) *meshtest.Mesh {
	t.Helper()
	m := meshtest.New(t)
	names := []string{imagesearch.Name, docsearch.Name, analysis.Name, folder.Name, summarize.Name, text.Name, knowledge.Name}
	m.Builtins(t, append(samples.Images(), samples.Documents()...), names...)
	chatReplica(t, m, nil, names)
	return m
}

// TestOfflinePlannerRunsOnTheBuiltinAgents sends the requests of the
// README, the demo and issue 30 to the built-in agents without an LLM and
// checks what the plans produced from the sample files.
func TestOfflinePlannerRunsOnTheBuiltinAgents(t *testing.T) {
	t.Parallel()
	m := builtinMesh(t)
	for _, tc := range []struct {
		message string
		agents  string   // the plan the output names
		output  []string // what the answer must say
		slot    string   // a slot the turn must fill
		text    string   // the TEXT it must hold, when set
	}{
		{"Find sunset images and organize them into folders", "ImageSearchAgent -> AnalysisAgent -> FolderAgent",
			[]string{"found 5 images", "sunset 5"}, route.SlotCategorization, ""},
		{"summarize the documents", "DocumentSearchAgent -> SummarizeAgent", []string{"found 5 documents", "summarised 5 documents", "summarizeagent wrote: "}, route.SlotText, ""},
		{"reverse the text hello world", "TextAgent", []string{"textagent wrote: dlrow olleh"}, route.SlotText, "dlrow olleh"},
		{"count the words in hello world", "TextAgent", []string{"2 words", "textagent wrote: 2"}, route.SlotText, "2"},
		{"find documents about jetstream and summarize them", "DocumentSearchAgent -> SummarizeAgent", []string{"nats-notes.txt", "summarised 1 document"}, route.SlotText, ""},
		{"count the words in 'red sky at night'", "TextAgent", []string{"textagent wrote: 4"}, route.SlotText, "4"},
		{"find 2 sunset images", "ImageSearchAgent", []string{"found 2 images"}, route.SlotImageIDs, ""},
		{"upper-case 'good morning'", "TextAgent", []string{"textagent wrote: good morning"}, route.SlotText, "GOOD MORNING"},
		{"search the knowledge base for 'are gift cards refundable?'", "KnowledgeAgent", []string{"found 1 passage in 5 stored documents"}, "current_chunks", ""},
	} {
		conv, resp, _ := ask(t, m, "", tc.message)
		if resp.State != schemas.ChatCompleted || resp.Planner != "offline" {
			t.Errorf("%q: %s: %s", tc.message, resp.State, resp.Output)
			continue
		}
		if !strings.Contains(resp.Output, "ran "+tc.agents+".") {
			t.Errorf("%q: output %q, want the plan %s", tc.message, resp.Output, tc.agents)
		}
		for _, want := range tc.output {
			if !strings.Contains(strings.ToLower(resp.Output), want) {
				t.Errorf("%q: output %q lacks %q", tc.message, resp.Output, want)
			}
		}
		for _, call := range resp.ToolCalls {
			if !call.Success || strings.Contains(call.Summary, "found 0") {
				t.Errorf("%q: %s found nothing: %s", tc.message, call.Agent, call.Summary)
			}
		}
		st := conversation(t, m, conv)
		v, ok := st.Slots[tc.slot]
		if !ok {
			t.Errorf("%q: slot %s is empty; slots %v", tc.message, tc.slot, st.Slots)
			continue
		}
		if tc.text != "" {
			var got string
			if err := v.Decode(&got); err != nil || got != tc.text {
				t.Errorf("%q: %s = %q (%v), want %q", tc.message, tc.slot, got, err, tc.text)
			}
		}
	}
}
