package state_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentmesh/agentmesh/internal/meshtest"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/pipelinespec"
	"github.com/agentmesh/agentmesh/schemas"
)

func TestCompletedSteps(t *testing.T) {
	sd := (&state.RunSpec{Spec: pipelinespec.PipelineSpec{Steps: []pipelinespec.PipelineStep{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}}},
		Waves: [][]string{{"a", "b"}, {"c"}, {"d"}}}).Init()
	cases := []struct {
		name string
		h    state.RunHeader
		want int
	}{
		{"not started", state.RunHeader{Status: schemas.RunRunning, Wave: -1}, 0},
		{"first wave, one ended", state.RunHeader{Status: schemas.RunRunning, Wave: 0, Ends: 1}, 0},
		{"second wave, one failed before", state.RunHeader{Status: schemas.RunRunning, Wave: 1, Completed: 1, FailedSteps: 1}, 1},
		{"completed", state.RunHeader{Status: schemas.RunCompleted, Wave: 3, Completed: 4}, 4},
		{"failed with a skip", state.RunHeader{Status: schemas.RunFailed, Wave: 3, Completed: 2, FailedSteps: 1, SkippedSteps: 1}, 2},
		{"rejected", state.RunHeader{Status: schemas.RunFailed, Wave: -1}, 0},
		// Headers of the previous layout count from their lists.
		{"previous layout: first wave, one ended", state.RunHeader{Status: schemas.RunRunning, Wave: 0, LegacyWaveEnded: []string{"b"}}, 1},
		{"previous layout: second wave, one failed before", state.RunHeader{Status: schemas.RunRunning, Wave: 1, LegacyFailed: map[string]string{"a": "x"}}, 1},
		{"previous layout: failed with a skip", state.RunHeader{Status: schemas.RunFailed, Wave: 1, LegacyFailed: map[string]string{"c": "x"}, LegacySkipped: map[string]string{"d": "c failed"}}, 2},
	}
	for _, c := range cases {
		if got := c.h.CompletedSteps(sd); got != c.want {
			t.Errorf("%s: %d completed, want %d", c.name, got, c.want)
		}
	}
}

func TestRecentConversationsAndRuns(t *testing.T) {
	m := meshtest.New(t)
	store := state.New(m.Res.Conversations, m.Res.Runs)
	ctx := context.Background()
	for i := range 3 {
		id := fmt.Sprintf("conv-%d", i)
		if _, err := store.UpdateConversation(ctx, id, func(st *schemas.ConversationState) error {
			st.Turns = i + 1
			st.History = append(st.History, schemas.HistoryEntry{Kind: "user", Text: "message " + id})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// the chat record of a conversation is no conversation of its own
		if _, err := store.PutChatRecord(ctx, id, []byte(`{}`), 0); err != nil {
			t.Fatal(err)
		}
	}
	convs, total, err := store.RecentConversations(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if total != 3 || len(convs) != 2 || convs[0].ID != "conv-2" || convs[1].ID != "conv-1" || convs[0].Turns != 3 || convs[0].LastMessage != "message conv-2" {
		t.Errorf("recent conversations: %d in all, %+v", total, convs)
	}

	now := time.Now().UTC()
	for i := range 2 {
		id := fmt.Sprintf("run-%d", i)
		sd := (&state.RunSpec{ID: id, Spec: pipelinespec.PipelineSpec{Name: "p", Steps: []pipelinespec.PipelineStep{{ID: "a"}, {ID: "b"}}}, Waves: [][]string{{"a"}, {"b"}}, CreatedAt: now}).Init()
		h := &state.RunHeader{ID: id, Name: "p", Status: schemas.RunRunning, Wave: 1, Completed: 1, CreatedAt: now, UpdatedAt: now}
		if _, err := store.CreateRun(ctx, sd, h, schemas.NewConversationState(id)); err != nil {
			t.Fatal(err)
		}
	}
	runs, total, err := store.RecentRuns(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != 2 || len(runs) != 2 || runs[0].ID != "run-1" || runs[0].Steps != 2 || runs[0].Completed != 1 || runs[0].Status != schemas.RunRunning {
		t.Errorf("recent runs: %d in all, %+v", total, runs)
	}
}
