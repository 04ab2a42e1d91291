package state_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentmesh/agentmesh/internal/meshtest"

	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

func TestStateStoreConcurrentWritersLoseNothing(t *testing.T) {
	m := meshtest.New(t)
	store := state.New(m.Res.Conversations, m.Res.Runs)
	const writers, each = 8, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := store.UpdateConversation(context.Background(), "conv-1", func(st *schemas.ConversationState) error {
					st.Turns++
					st.AppliedTasks = append(st.AppliedTasks, fmt.Sprintf("w%d-%d", w, i))
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st, err := store.Conversation(context.Background(), "conv-1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Turns != writers*each || len(st.AppliedTasks) != writers*each {
		t.Fatalf("turns %d, applied %d; want %d each: a concurrent update was lost", st.Turns, len(st.AppliedTasks), writers*each)
	}
}

func TestStateStoreUnchangedSkipsWriteAndMissingRunIsNotFound(t *testing.T) {
	m := meshtest.New(t)
	store := state.New(m.Res.Conversations, m.Res.Runs)
	ctx := context.Background()
	if _, err := store.UpdateConversation(ctx, "c", func(*schemas.ConversationState) error { return nil }); err != nil {
		t.Fatal(err)
	}
	e1, _ := m.Res.Conversations.Get(ctx, "c")
	if _, err := store.UpdateConversation(ctx, "c", func(*schemas.ConversationState) error { return state.ErrUnchanged }); err != nil {
		t.Fatal(err)
	}
	e2, _ := m.Res.Conversations.Get(ctx, "c")
	if e1.Revision() != e2.Revision() {
		t.Errorf("ErrUnchanged wrote: revision %d -> %d", e1.Revision(), e2.Revision())
	}
	if _, err := store.Run(ctx, "nope"); !errors.Is(err, state.ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("a missing run: %v, want ErrNotFound naming it", err)
	}
	if _, err := store.Run(ctx, "bad id!"); err == nil || !strings.Contains(err.Error(), "bad id!") {
		t.Errorf("bad id: %v", err)
	}
}

func TestStateStoreCompactsLongConversationsUnderTheBound(t *testing.T) {
	m := meshtest.New(t)
	const bound = 64 << 10
	store := state.New(m.Res.Conversations, m.Res.Runs,
		state.WithMaxStateBytes(bound), state.WithMaxHistory(1000), state.WithMaxAppliedTasks(100))
	ctx := context.Background()
	big := strings.Repeat("x", 2000)
	for i := range 300 {
		_, err := store.UpdateConversation(ctx, "long", func(st *schemas.ConversationState) error {
			st.History = append(st.History, schemas.HistoryEntry{Kind: "note", Text: big,
				Outputs: map[string]schemas.TypedValue{"t": schemas.TextValue(big, "x")}})
			st.AppliedTasks = append(st.AppliedTasks, fmt.Sprintf("task-%d", i))
			return nil
		})
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	e, err := m.Res.Conversations.Get(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Value()) > bound {
		t.Fatalf("stored %d bytes, over the bound %d", len(e.Value()), bound)
	}
	var st schemas.ConversationState
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.AppliedTasks) != 100 || st.AppliedTasks[99] != "task-299" {
		t.Errorf("applied tasks: %d, last %q; want the newest 100", len(st.AppliedTasks), st.AppliedTasks[len(st.AppliedTasks)-1])
	}
	if n := len(st.History); n == 0 || st.History[n-1].Outputs == nil {
		t.Errorf("the newest history entry lost its values")
	}
}
