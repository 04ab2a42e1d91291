package chat_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentmesh/agentmesh/llm"
	"github.com/agentmesh/agentmesh/llm/llmtest"
	"github.com/agentmesh/agentmesh/orchestrator/chat"
	"github.com/agentmesh/agentmesh/orchestrator/internal/meshtest"
	"github.com/agentmesh/agentmesh/schemas"
)

// With a guard, the chat's model is not sent addresses, a refused agent
// is not called (the model reads why) and an agent held for approval is
// not called either, as a turn cannot wait.
func TestChatGuardRedactsAndRefusesAgentCalls(t *testing.T) {
	t.Parallel()
	m := meshtest.New(t)
	searched := make(chan string, 4)
	seedAgents(t, m, searched)
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call("ImageSearch", map[string]any{"query": "sunset"}), llmtest.Call("ImageAnalysis", map[string]any{})),
		llmtest.Answer("I could not search."),
	)
	ps, err := llm.PolicyRules{RefuseTools: []string{"ImageSearch"}, ApproveTools: []string{"ImageAnalysis"}, Redact: []string{"emails"}}.Policies()
	if err != nil {
		t.Fatal(err)
	}
	log := &policyLog{}
	chatReplica(t, m, nil, []string{"ImageSearch", "ImageAnalysis", "FolderOrganizer"},
		chat.WithLLM(newLLM(t, srv)), chat.WithGuard(llm.NewGuard(ps, llm.WithPolicyObserver(log.observe))))

	_, resp, _ := ask(t, m, "", "find sunsets for ann@example.com")
	if resp.State != schemas.ChatCompleted || len(resp.ToolCalls) != 2 {
		t.Fatalf("response = %+v", resp)
	}
	select {
	case q := <-searched:
		t.Errorf("the refused agent was called with %q", q)
	default:
	}
	for i, want := range []string{"ImageSearch may not be called", "cannot wait for it"} {
		if rec := resp.ToolCalls[i]; rec.Code != schemas.CodeRefused || !strings.Contains(rec.Error, want) {
			t.Errorf("record %d: %+v", i, rec)
		}
	}
	reqs := srv.Requests()
	if user := reqs[0].MessagesOf("user"); strings.Contains(user[len(user)-1].Content, "ann@example.com") {
		t.Errorf("the model was sent %q", user[len(user)-1].Content)
	}
	if obs := toolMessages(reqs[1]); len(obs) != 2 || !strings.Contains(obs[0], "refused by policy refuse-tools") {
		t.Errorf("observations %q", obs)
	}
	if log.n() < 3 {
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
