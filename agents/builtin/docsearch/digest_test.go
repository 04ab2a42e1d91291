package docsearch_test

import (
	"slices"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/docsearch"
)

func TestDigest(t *testing.T) {
	d := docsearch.Digest("Streams store messages. A stream has consumers; consumers read the stream. 2024 2024 2024")
	if len(d) < 2 || d[0] != "stream" || d[1] != "consumer" || slices.Contains(d, "2024") {
		t.Errorf("Digest = %q", d)
	}
}
