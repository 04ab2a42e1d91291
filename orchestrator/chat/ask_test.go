package chat_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/bus"
	"github.com/agentmesh/agentmesh/internal/fixture"
	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// The model asks the user a question (ask_user): the turn ends
// input_required, the conversation state says what it waits for, and the
// next message answers the question as the tool's result, continuing the
// turn's messages.
func TestChatModelAsksTheUser(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	seedAgents(t, m, nil)
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call(chat.AskUserTool, map[string]any{"question": "How many sunset images do you want?"})),
		llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": "q7:sunset"})),
		llmtest.Answer("I found 7 sunset images."),
	)
	chatReplica(t, m, nil, []string{"ImageSearch", "ImageAnalysis", "FolderOrganizer"}, chat.WithLLM(newLLM(t, srv)))

	conv, resp, ce := ask(t, m, "", "Find sunset images")
	if resp.State != schemas.ChatInputRequired || resp.Question != "How many sunset images do you want?" ||
		resp.Output != resp.Question || resp.AskedBy != "" || len(resp.ToolCalls) != 0 {
		t.Fatalf("first turn: %+v", resp)
	}
	if p := ce.progress(); !slices.Contains(p, "the model asks the user") {
		t.Errorf("progress %q does not say the model asks", p)
	}
	if st := conversation(t, m, conv); st.InputRequired != resp.Question {
		t.Errorf("conversation input_required = %q, want the question", st.InputRequired)
	}
	tools := srv.Requests()[0].ToolNames()
	if !slices.Contains(tools, chat.AskUserTool) {
		t.Errorf("tools %v do not offer %s", tools, chat.AskUserTool)
	}

	_, resp, _ = ask(t, m, conv, "seven")
	if resp.State != schemas.ChatCompleted || resp.Output != "I found 7 sunset images." || len(resp.ToolCalls) != 1 {
		t.Fatalf("second turn: %+v", resp)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model saw %d requests, want 3", len(reqs))
	}
	cont := reqs[1].Body.Messages
	var askID string
	for _, msg := range cont {
		for _, tc := range msg.ToolCalls {
			if tc.Function.Name == chat.AskUserTool {
				askID = tc.ID
			}
		}
	}
	tm := reqs[1].MessagesOf("tool")
	if askID == "" || len(tm) != 1 || tm[0].ToolCallID != askID || tm[0].Content != "The user answered: seven" {
		t.Fatalf("the answer does not continue the question: ask call %q, tool messages %+v", askID, tm)
	}
	if users := reqs[1].MessagesOf("user"); len(users) != 1 || users[0].Content != "Find sunset images" {
		t.Errorf("user messages of the continued turn: %+v", users)
	}
	st := conversation(t, m, conv)
	if st.InputRequired != "" || slotCount(t, st, "current_image_ids") != 7 {
		t.Errorf("after the answer: input_required %q, slots %v", st.InputRequired, st.Slots)
	}
}

// An agent whose result asks for approval ends the turn input_required
// with its question; the user's next message goes to the model after the
// agent's observation, and the model calls it again approved.
func TestChatAgentAsksForApproval(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	var runs fixture.Counter
	m.Agent(t, schemas.AgentContract{Name: "Careful", Capability: schemas.CapOrganization, Description: "deletes old files, once approved",
		Params:  []byte(`{"type":"object","properties":{"approved":{"type":"boolean"}}}`),
		Outputs: []schemas.TypedOutput{{Name: "report", DataType: schemas.TypeText}}},
		func(ctx context.Context, ec *schemas.ExecutionContext) (schemas.AgentResult, error) {
			if ec.Params()["approved"] != true {
				return schemas.Failure("Careful", schemas.CodeApprovalRequired, "delete 3 old files?", false), nil
			}
			runs.Add("deleted")
			return fixture.OK("Careful", "deleted 3 files", map[string]schemas.TypedValue{"report": schemas.TextValue("deleted 3", "Careful")}), nil
		}, 2)
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call("Careful", map[string]any{})),
		llmtest.Calls(llmtest.Call("Careful", map[string]any{"approved": true})),
		llmtest.Answer("Deleted 3 old files."),
	)
	chatReplica(t, m, nil, []string{"Careful"}, chat.WithLLM(newLLM(t, srv)))

	conv, resp, ce := ask(t, m, "", "Clean up old files")
	if resp.State != schemas.ChatInputRequired || resp.AskedBy != "Careful" || resp.Question != "Careful asks: delete 3 old files?" {
		t.Fatalf("first turn: %+v", resp)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Code != schemas.CodeApprovalRequired {
		t.Errorf("tool calls: %+v", resp.ToolCalls)
	}
	if n := runs.Snapshot()["deleted"]; n != 0 {
		t.Fatalf("the agent acted %d times before the approval", n)
	}
	ce.mu.Lock()
	events := slices.Clone(ce.events)
	ce.mu.Unlock()
	for _, ev := range events {
		if ev.Type == bus.TypeChatResponded {
			if err := schemas.ValidateJSON(schemas.SchemaChatResponse, ev.Data); err != nil {
				t.Errorf("input_required response fails its schema: %v", err)
			}
		}
	}
	if st := conversation(t, m, conv); st.InputRequired != resp.Question {
		t.Errorf("conversation input_required = %q", st.InputRequired)
	}

	_, resp, _ = ask(t, m, conv, "yes, go ahead")
	if resp.State != schemas.ChatCompleted || resp.Output != "Deleted 3 old files." {
		t.Fatalf("second turn: %+v", resp)
	}
	if n := runs.Snapshot()["deleted"]; n != 1 {
		t.Errorf("the agent acted %d times after the approval, want 1", n)
	}
	msgs := srv.Requests()[1].Body.Messages
	last := msgs[len(msgs)-1]
	before := msgs[len(msgs)-2]
	if last.Role != "user" || last.Content != "yes, go ahead" || before.Role != "tool" || !strings.Contains(before.Content, "delete 3 old files?") {
		t.Errorf("the continued turn ends %s %q after %s %q; want the answer after the agent's question", last.Role, last.Content, before.Role, before.Content)
	}
}
