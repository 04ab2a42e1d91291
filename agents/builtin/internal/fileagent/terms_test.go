package fileagent_test

import (
	"slices"
	"testing"

	"github.com/agentmesh/agentmesh/agents/builtin/internal/fileagent"
)

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Find sunset images and organize them into folders", []string{"sunset"}},
		{"Sunsets, CITIES & trees!", []string{"sunset", "city", "tree"}},
		{"the glass bus", []string{"glass", "bus"}},
		{"IMG_0042.jpg", []string{"img", "0042", "jpg"}},
	}
	for _, tt := range tests {
		if got := fileagent.Terms(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
