package main

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmesh/agentmesh/schemas"
)

// The rollout the flags ask for, given the one under way (cases that need
// no registry: the version that takes the rest is known).
func TestNextRollout(t *testing.T) {
	at := func(from, to string, w int) *schemas.Rollout {
		return &schemas.Rollout{Agent: "A", From: from, To: to, Weight: w}
	}
	for _, tc := range []struct {
		name      string
		cur       *schemas.Rollout
		to, from  string
		weight    int
		weightSet bool
		shadow    bool
		want      schemas.Rollout
		err       string
	}{
		{name: "first, from given", to: "2.0.0", from: "1.0.0", weight: 10, weightSet: true,
			want: schemas.Rollout{Agent: "A", From: "1.0.0", To: "2.0.0", Weight: 10}},
		{name: "raise the weight, to kept", cur: at("1.0.0", "2.0.0", 10), weight: 50, weightSet: true,
			want: schemas.Rollout{Agent: "A", From: "1.0.0", To: "2.0.0", Weight: 50}},
		{name: "shadow keeps the weight", cur: at("1.0.0", "2.0.0", 10), to: "2.0.0", shadow: true,
			want: schemas.Rollout{Agent: "A", From: "1.0.0", To: "2.0.0", Weight: 10, Shadow: true}},
		{name: "after a promote, from the promoted", cur: at("1.0.0", "2.0.0", 100), to: "3.0.0", weight: 5, weightSet: true,
			want: schemas.Rollout{Agent: "A", From: "2.0.0", To: "3.0.0", Weight: 5}},
		{name: "after a roll back, from the old", cur: at("1.0.0", "2.0.0", 0), to: "3.0.0", weight: 5, weightSet: true,
			want: schemas.Rollout{Agent: "A", From: "1.0.0", To: "3.0.0", Weight: 5}},
		{name: "another while one is under way", cur: at("1.0.0", "2.0.0", 10), to: "3.0.0", weight: 5, weightSet: true,
			err: "under way at 10%"},
		{name: "no --to, nothing under way", weight: 5, weightSet: true, err: "give --to VERSION"},
		{name: "from is to", to: "2.0.0", from: "2.0.0", weight: 5, weightSet: true, err: `both "2.0.0"`},
	} {
		got, err := nextRollout(context.Background(), nil, "A", tc.cur, tc.to, tc.from, tc.weight, tc.weightSet, tc.shadow)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %+v, %v; want an error saying %s", tc.name, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}
