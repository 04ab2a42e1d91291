package state_test

import (
	"context"
	"fmt"

	"github.com/agentmesh/agentmesh/bus/embedded"
	"github.com/agentmesh/agentmesh/orchestrator/state"
	"github.com/agentmesh/agentmesh/schemas"
)

// The Store owns the conversation and run keys: an update reads the
// newest value, applies a change and writes it back with compare-and-set,
// retrying when another replica wrote in between.
func ExampleStore_UpdateConversation() {
	ctx := context.Background()
	mesh, err := embedded.StartLocal(ctx, embedded.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mesh.Close()
	store := state.New(mesh.Resources.Conversations, mesh.Resources.Runs)

	for _, text := range []string{"first", "second"} {
		_, err := store.UpdateConversation(ctx, "c-42", func(st *schemas.ConversationState) error {
			st.Slots["current_text"] = schemas.TextValue(text, "example")
			return nil
		})
		if err != nil {
			fmt.Println(err)
		}
	}
	st, err := store.Conversation(ctx, "c-42")
	if err != nil {
		fmt.Println(err)
		return
	}
	text, _ := st.Slots["current_text"].Text()
	fmt.Println(st.ID, text)
	// Output: c-42 second
}
