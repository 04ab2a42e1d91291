package llm_test

import (
	"fmt"

	"github.com/agentmesh/agentmesh/llm"
)

func ExamplePrice_Cost() {
	p := llm.DefaultPrices()["gpt-4o-mini"]
	fmt.Printf("$%.6f\n", p.Cost(1000, 200))
	// Output: $0.000270
}
