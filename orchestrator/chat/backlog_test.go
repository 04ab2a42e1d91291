package chat_test

import (
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// A tool call whose task MESH_TASKS refuses (full) returns backlog_full to
// the loop at once: the model reads it and answers, and the turn's record
// of the call carries the code.
func TestToolCallIntoFullTasksStream(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	m.Stuck(t, "Stuck", 2)
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call("Stuck", map[string]any{})),
		llmtest.Answer("Stuck is too busy right now."),
	)
	chatReplica(t, m, nil, []string{"Stuck"}, chat.WithLLM(newLLM(t, srv)))

	_, resp, _ := ask(t, m, "", "do the stuck thing")
	if len(resp.ToolCalls) != 1 {
		t.Fatalf("tool calls %+v, want one", resp.ToolCalls)
	}
	tc := resp.ToolCalls[0]
	if tc.Code != schemas.CodeBacklogFull || !strings.Contains(tc.Error, m.Srv.Names().TasksStream()) || !strings.Contains(tc.Error, "MaxMsgs 2") {
		t.Errorf("tool call %+v, want code %s naming %s and MaxMsgs 2", tc, schemas.CodeBacklogFull, m.Srv.Names().TasksStream())
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model saw %d requests, want 2", len(reqs))
	}
	tools := reqs[1].MessagesOf("tool")
	if len(tools) != 1 || !strings.Contains(tools[0].Content, schemas.CodeBacklogFull) {
		t.Errorf("the model read %+v, want the call's backlog_full", tools)
	}
}
