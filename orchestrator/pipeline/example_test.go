package pipeline_test

import (
	"fmt"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/orchestrator/pipeline"
	"github.com/agentmesh/agentmesh/orchestrator/route"
	"github.com/agentmesh/agentmesh/schemas"
)

// Validate checks a spec against the live contracts before anything runs
// and returns the waves the scheduler will start, one after another.
func ExampleValidate() {
	contracts := map[string]schemas.AgentContract{
		"Search": {Name: "Search", Capability: schemas.CapSearch, Description: "finds images",
			Outputs: []schemas.TypedOutput{{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages, Mergeable: true}}},
		"Caption": {Name: "Caption", Capability: schemas.CapAnalysis, Description: "captions images",
			Inputs:  []schemas.TypedInput{{Name: "images", DataType: schemas.TypeFileIDs, ContentTypeHint: schemas.ContentImages, Required: true}},
			Outputs: []schemas.TypedOutput{{Name: "captions", DataType: schemas.TypeAnalysisResult}}},
	}
	lookup := func(name string) (schemas.AgentContract, bool) { c, ok := contracts[name]; return c, ok }
	spec := client.NewPipeline("captions").
		Step("find-sun", "Search").
		Step("find-sea", "Search").
		Then("caption", "Caption").After("find-sun", "find-sea").
		MustBuild()
	_, waves, err := pipeline.Validate(spec, lookup, route.NewRouter())
	fmt.Println(waves, err)

	bad := client.NewPipeline("broken").Step("caption", "Caption").MustBuild()
	_, _, err = pipeline.Validate(bad, lookup, route.NewRouter())
	fmt.Println(err != nil)
	// Output:
	// [[find-sun find-sea] [caption]] <nil>
	// true
}
