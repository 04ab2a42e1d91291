package chat_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

// The seed chat runs end to end on Anthropic's Messages API: the agents
// are offered as tools with their input schemas, the model's tool_use
// blocks call them, their observations go back as tool_result blocks, and
// the conversation's state is the one the OpenAI-compatible model leaves.
func TestChatSeedScenarioWithAnthropic(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	seedAgents(t, m, nil)
	srv := llmtest.NewAnthropic(t,
		llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": "sunset"})),
		llmtest.Calls(llmtest.Call("ImageAnalysis", map[string]any{})),
		llmtest.Calls(llmtest.Call("FolderOrganizer", map[string]any{"categories": "†state.current_categorization"})),
		llmtest.Answer("I found 12 sunset images and organized them into 2 folders."),
	)
	model, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	chatReplica(t, m, nil, []string{"ImageSearch", "ImageAnalysis", "FolderOrganizer"}, chat.WithLLM(model))

	conv, resp, _ := ask(t, m, "", "Find sunset images and organize them into folders")

	if resp.State != schemas.ChatCompleted || resp.Output != "I found 12 sunset images and organized them into 2 folders." || resp.Planner != "llm" {
		t.Fatalf("response = %+v", resp)
	}
	if resp.Steps != 4 || len(resp.ToolCalls) != 3 || resp.Tokens != (schemas.Tokens{Prompt: 400, Completion: 80}) {
		t.Fatalf("steps %d, tool calls %+v, tokens %+v", resp.Steps, resp.ToolCalls, resp.Tokens)
	}
	for i, want := range []string{"ImageSearch", "ImageAnalysis", "FolderOrganizer"} {
		if tc := resp.ToolCalls[i]; tc.Agent != want || !tc.Success {
			t.Errorf("tool call %d = %+v, want a successful %s", i, tc, want)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("model saw %d requests, want 4", len(reqs))
	}
	for i, r := range reqs {
		if got := r.ToolNames(); !slices.Equal(got, []string{"FolderOrganizer", "ImageAnalysis", "ImageSearch", chat.AskUserTool}) {
			t.Errorf("request %d tools = %v", i, got)
		}
		if len(r.Body.System) < 2 || !strings.HasPrefix(r.Body.System[1].Text, "## Data: ¶state") {
			t.Errorf("request %d: system blocks are not the system prompt and the state Data: %+v", i, r.Body.System)
		}
	}
	// The last request carries the three calls and their observations.
	var uses, results []string
	for _, msg := range reqs[3].Body.Messages {
		for _, b := range msg.Content {
			switch b.Type {
			case "tool_use":
				uses = append(uses, b.Name)
			case "tool_result":
				results = append(results, b.ResultText())
			}
		}
	}
	if strings.Join(uses, ",") != "ImageSearch,ImageAnalysis,FolderOrganizer" || len(results) != 3 ||
		!strings.Contains(results[0], "12 images") || !strings.Contains(results[2], "2 folders (12 files moved)") {
		t.Errorf("tool_use %v, tool_result %q", uses, results)
	}
	st := conversation(t, m, conv)
	if n := slotCount(t, st, route.SlotImageIDs); n != 12 {
		t.Errorf("current_image_ids holds %d, want 12", n)
	}
	if n := slotCount(t, st, route.SlotCategorization); n != 2 {
		t.Errorf("current_categorization holds %d categories, want 2", n)
	}
}

// A conversation stored by the previous layout, in the OpenAI client's
// message JSON, goes on with an Anthropic model: its earlier turn reaches
// the Messages API as a tool_use block with the call's name and arguments
// and the tool_result that answered it.
func TestChatConversationOfThePreviousLayoutGoesOnWithAnthropic(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	conv := "legacy-anthropic"
	putPreviousLayoutConversation(t, m, conv)
	srv := llmtest.NewAnthropic(t, llmtest.Answer("Nothing more to do."))
	model, err := llm.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	chatReplica(t, m, nil, nil, chat.WithLLM(model))
	_, r, _ := ask(t, m, conv, "thanks, anything else?")
	if r.State != schemas.ChatCompleted || r.Output != "Nothing more to do." {
		t.Fatalf("next turn: %s %s", r.State, r.Output)
	}
	var use, result *llmtest.ContentBlock
	var users []string
	for _, msg := range srv.Requests()[0].Body.Messages {
		for i, b := range msg.Content {
			switch b.Type {
			case "tool_use":
				use = &msg.Content[i]
			case "tool_result":
				result = &msg.Content[i]
			case "text":
				if msg.Role == "user" {
					users = append(users, b.Text)
				}
			}
		}
	}
	if use == nil || use.ID != "call_1" || use.Name != "ImageSearch" || string(use.Input) != `{"query":"beach"}` {
		t.Fatalf("tool_use of the stored turn = %+v", use)
	}
	if result == nil || result.ToolUseID != "call_1" || result.ResultText() != "found 3 beach photos" {
		t.Fatalf("tool_result of the stored turn = %+v", result)
	}
	if strings.Join(users, "|") != "find beach photos|thanks, anything else?" {
		t.Errorf("user messages = %q", users)
	}
}
