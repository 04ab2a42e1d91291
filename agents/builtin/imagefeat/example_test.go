package imagefeat_test

import (
	"fmt"

	"github.com/agentmesh/agentmesh/agents/builtin/imagefeat"
	"github.com/agentmesh/agentmesh/agents/builtin/samples"
)

func ExampleFeatures_Category() {
	f := imagefeat.Extract(samples.Draw(samples.SceneSunset, 320, 240, 42))
	fmt.Println(f.Category(), f.HueName(), f.Orientation())
	// Output: sunset orange landscape
}
