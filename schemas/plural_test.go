package schemas_test

import (
	"testing"

	"github.com/agentmesh/agentmesh/schemas"
)

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 categories", 1: "1 category", 2: "2 categories", -1: "-1 categories"} {
		if got := schemas.Plural(n, "category", "categories"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}
