package route_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

// A result's outputs go into state slots by data type and hint; a data type
// the agent declares in its contract is learnt on the way and merged by its
// declared rule.
func ExampleRouter_Apply() {
	counter := schemas.AgentContract{Name: "Counter", Capability: schemas.CapAnalysis, Description: "counts words",
		DataTypes: []schemas.DataTypeDefinition{{Name: "WORD_FREQUENCIES", Description: "word counts", Merge: "sum",
			Schema: json.RawMessage(`{"type":"object","additionalProperties":{"type":"integer","minimum":1}}`)}},
		Outputs: []schemas.TypedOutput{
			{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages},
			{Name: "freq", DataType: "WORD_FREQUENCIES", Mergeable: true},
		}}
	r := route.NewRouter()
	st := schemas.NewConversationState("c-1")
	for i, words := range []string{`{"sun":2}`, `{"sun":1,"sea":1}`} {
		res := schemas.AgentResult{Success: true, Agent: "Counter", Outputs: map[string]schemas.TypedValue{
			"images": schemas.FilesValue(schemas.FromIDs(schemas.ContentImages, "img-1", "img-2"), "Counter"),
			"freq":   {DataType: "WORD_FREQUENCIES", Value: json.RawMessage(words)},
		}}
		if _, err := r.Apply(context.Background(), st, counter, fmt.Sprintf("task-%d", i), res); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(r.DataTypes().Describe(st.Slots[route.SlotImageIDs]), "in", route.SlotImageIDs)
	fmt.Println(string(st.Slots["current_word_frequencies"].Value))
	// Output:
	// 2 images in current_image_ids
	// {"sea":1,"sun":3}
}
