package chat_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/schemas"
)

// With a guard, the chat's model is not sent addresses and a refused
// agent is not called (the model reads why). An agent held for approval
// is not called either: the turn asks the user, and a yes lets the same
// call run in the turn that goes on.
func TestChatGuardRedactsRefusesAndHoldsAgentCalls(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	searched := make(chan string, 4)
	seedAgents(t, m, searched)
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": "sunset"}), llmtest.Call("FolderOrganizer", map[string]any{})),
		llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": "sunset"})),
		llmtest.Answer("I found 12 sunset images."),
	)
	ps, err := llm.PolicyRules{RefuseTools: []string{"FolderOrganizer"}, ApproveTools: []string{"ImageSearch"}, Redact: []string{"emails"}}.Policies()
	if err != nil {
		t.Fatal(err)
	}
	log := &policyLog{}
	chatReplica(t, m, nil, []string{"ImageSearch", "ImageAnalysis", "FolderOrganizer"},
		chat.WithLLM(newLLM(t, srv)), chat.WithGuard(llm.NewGuard(ps, llm.WithPolicyObserver(log.observe))))

	conv, resp, _ := ask(t, m, "", "find sunsets for ann@example.com")
	if resp.State != schemas.ChatInputRequired || len(resp.ToolCalls) != 2 || !strings.Contains(resp.Question, `ImageSearch with {"query":"sunset"}`) ||
		!strings.Contains(resp.Question, "answer yes to approve") {
		t.Fatalf("first turn = %+v", resp)
	}
	select {
	case q := <-searched:
		t.Fatalf("the held agent was called with %q before the approval", q)
	default:
	}
	if rec := resp.ToolCalls[0]; rec.Code != schemas.CodeApprovalRequired {
		t.Errorf("held call record %+v", rec)
	}
	if rec := resp.ToolCalls[1]; rec.Code != schemas.CodeRefused || !strings.Contains(rec.Error, "FolderOrganizer may not be called") {
		t.Errorf("refused call record %+v", rec)
	}
	if user := srv.Requests()[0].MessagesOf("user"); strings.Contains(user[len(user)-1].Content, "ann@example.com") {
		t.Errorf("the model was sent %q", user[len(user)-1].Content)
	}

	_, resp, _ = ask(t, m, conv, "yes")
	if resp.State != schemas.ChatCompleted || resp.Output != "I found 12 sunset images." {
		t.Fatalf("after the approval: %+v", resp)
	}
	select {
	case q := <-searched:
		if q != "sunset" {
			t.Errorf("search %q", q)
		}
	default:
		t.Error("the approved call was not made")
	}
	if obs := toolMessages(srv.Requests()[1]); len(obs) != 2 || !strings.Contains(obs[0], "needs the user's approval") || !strings.Contains(obs[1], "refused by policy refuse-tools") {
		t.Errorf("observations %q", obs)
	}
	if log.n() < 4 {
		t.Errorf("decisions: %+v", log.events)
	}
}

type policyLog struct {
	mu     sync.Mutex
	events []llm.PolicyEvent
}

func (l *policyLog) observe(_ context.Context, ev llm.PolicyEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *policyLog) n() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}
